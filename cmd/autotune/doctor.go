package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gemvtune/gemvtune/internal/gpu"
)

func init() {
	register(&command{
		name:  "doctor",
		short: "show the driver, NVRTC libraries and GPUs; fail if tuning cannot run",
		run:   runDoctor,
	})
}

func runDoctor(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: autotune doctor")
		fmt.Fprintln(fs.Output(), "Prints the CUDA driver, every NVRTC library found (path, version, archs) and every GPU.")
		fmt.Fprintln(fs.Output(), "Exits 0 when at least one GPU and an NVRTC that can build for it exist.")
		fmt.Fprintf(fs.Output(), "NVRTC is searched in $%s, the loader path, $CUDA_HOME/lib64, /usr/local/cuda/lib64 and pip's nvidia/ folders.\n", gpu.EnvNVRTC)
	}
	if help, err := parseArgs(fs, args, 0); help || err != nil {
		return err
	}
	return doctor(os.Stdout)
}

// doctor prints what it finds and returns the first thing that stops tuning.
func doctor(w io.Writer) error {
	var problems []error
	fmt.Fprintf(w, "version: %s\n", versionLine())

	drv, drvErr := gpu.DriverVersion()
	if drvErr != nil {
		fmt.Fprintf(w, "driver:  none (%v)\n", drvErr)
		problems = append(problems, drvErr)
	} else {
		line := fmt.Sprintf("driver:  CUDA %s (%s)", drv, gpu.DriverPath())
		if n, err := gpu.OpenNVML(); err == nil {
			if v, err := n.DriverVersion(); err == nil {
				line += ", NVIDIA " + v
			}
			n.Close()
		}
		fmt.Fprintln(w, line)
	}

	libs, nvErr := gpu.FindNVRTC()
	if nvErr != nil {
		fmt.Fprintf(w, "nvrtc:   none (%v)\n", nvErr)
		problems = append(problems, nvErr)
	}
	for _, n := range libs {
		fmt.Fprintf(w, "nvrtc:   %s  NVRTC %s  [%s]  %s\n", n.Path, n.Version, n.Origin, archList(n.Archs))
	}

	if drvErr == nil {
		gpus, err := gpu.Probe()
		if err != nil {
			fmt.Fprintf(w, "gpus:    none (%v)\n", err)
			problems = append(problems, err)
		}
		nv, nvmlErr := gpu.OpenNVML()
		if nvmlErr == nil {
			defer nv.Close()
		} else {
			fmt.Fprintf(w, "nvml:    %v (peak bandwidth from attributes)\n", nvmlErr)
		}
		for _, g := range gpus {
			fmt.Fprintf(w, "gpu %d:   %s\n", g.Ordinal, gpuLine(g, nv))
			if len(libs) > 0 {
				if c, err := gpu.ChooseNVRTC(libs, g.Arch); err != nil {
					fmt.Fprintf(w, "         nvrtc: %v\n", err)
					problems = append(problems, fmt.Errorf("GPU %d (%s): %w", g.Ordinal, g.Arch, err))
				} else {
					fmt.Fprintf(w, "         nvrtc: NVRTC %s builds %s\n", c.Version, g.Arch)
				}
			}
		}
	}
	if len(problems) > 0 {
		return problems[0]
	}
	fmt.Fprintln(w, "ok: ready to tune")
	return nil
}

// gpuLine describes one GPU, with NVML's figures when nv is not nil.
func gpuLine(g gpu.Info, nv *gpu.NVML) string {
	s := fmt.Sprintf("%s  %s  %d SMs  L2 %d MiB  %.0f GiB  %s",
		g.Name, g.Arch, g.SMs, g.L2Bytes>>20, float64(g.TotalMem)/(1<<30), g.UUID)
	peak, src := g.PeakGBps(), "attributes"
	if nv != nil {
		if d, err := nv.Device(g.UUID); err == nil {
			if ni, err := d.Info(); err == nil && ni.PeakGBps() > 0 {
				peak, src = ni.PeakGBps(), "NVML"
			}
			if c, err := d.Clocks(); err == nil {
				s += "\n         clocks: " + c.String()
			}
		}
	}
	if peak > 0 {
		s += fmt.Sprintf("\n         theoretical peak %.0f GB/s (%s; attributes say %.0f)", peak, src, g.PeakGBps())
	}
	return s
}

// archList writes "sm_50 sm_52 ... sm_90".
func archList(as []gpu.Arch) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.String()
	}
	return strings.Join(parts, " ")
}
