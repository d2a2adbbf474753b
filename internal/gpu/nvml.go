//go:build cgo

package gpu

import (
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML is an initialised NVML session. Close it when done.
type NVML struct{}

// OpenNVML initialises NVML. Without libnvidia-ml.so.1 it returns
// ErrNoNVML (wrapped), never a panic.
func OpenNVML() (n *NVML, err error) {
	defer func() {
		if v := recover(); v != nil {
			n, err = nil, fmt.Errorf("%w: %v", ErrNoNVML, v)
		}
	}()
	if r := nvml.Init(); r != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: nvmlInit: %s", ErrNoNVML, nvml.ErrorString(r))
	}
	return &NVML{}, nil
}

// Close shuts NVML down.
func (n *NVML) Close() error {
	if r := nvml.Shutdown(); r != nvml.SUCCESS {
		return fmt.Errorf("nvmlShutdown: %s", nvml.ErrorString(r))
	}
	return nil
}

// nvmlErr formats a failed NVML call.
func nvmlErr(call string, r nvml.Return) error {
	return fmt.Errorf("%s: %s", call, nvml.ErrorString(r))
}

// DriverVersion returns the driver's version string, e.g. "580.65.06".
func (n *NVML) DriverVersion() (string, error) {
	v, r := nvml.SystemGetDriverVersion()
	if r != nvml.SUCCESS {
		return "", nvmlErr("nvmlSystemGetDriverVersion", r)
	}
	return v, nil
}

// NVMLDevice is one GPU seen through NVML.
type NVMLDevice struct {
	h nvml.Device
}

// Device finds the GPU with a UUID as Info.UUID writes it ("GPU-...").
// NVML numbers GPUs differently from CUDA, so match by UUID.
func (n *NVML) Device(uuid string) (*NVMLDevice, error) {
	h, r := nvml.DeviceGetHandleByUUID(uuid)
	if r != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device %s: %w", uuid, nvmlErr("nvmlDeviceGetHandleByUUID", r))
	}
	return &NVMLDevice{h: h}, nil
}

// Info reads the static facts of the GPU.
func (d *NVMLDevice) Info() (NVMLInfo, error) {
	var i NVMLInfo
	var r nvml.Return
	if i.Name, r = d.h.GetName(); r != nvml.SUCCESS {
		return i, nvmlErr("nvmlDeviceGetName", r)
	}
	if i.UUID, r = d.h.GetUUID(); r != nvml.SUCCESS {
		return i, nvmlErr("nvmlDeviceGetUUID", r)
	}
	if i.Arch.Major, i.Arch.Minor, r = d.h.GetCudaComputeCapability(); r != nvml.SUCCESS {
		return i, nvmlErr("nvmlDeviceGetCudaComputeCapability", r)
	}
	bus, r := d.h.GetMemoryBusWidth()
	if r != nvml.SUCCESS {
		return i, nvmlErr("nvmlDeviceGetMemoryBusWidth", r)
	}
	mem, r := d.h.GetMaxClockInfo(nvml.CLOCK_MEM)
	if r != nvml.SUCCESS {
		return i, nvmlErr("nvmlDeviceGetMaxClockInfo(mem)", r)
	}
	sm, r := d.h.GetMaxClockInfo(nvml.CLOCK_SM)
	if r != nvml.SUCCESS {
		return i, nvmlErr("nvmlDeviceGetMaxClockInfo(sm)", r)
	}
	i.MemBusBits, i.MaxMemClockMHz, i.MaxSMClockMHz = int(bus), int(mem), int(sm)
	return i, nil
}

// Clocks snapshots the current clocks, temperature and clock-event reasons.
func (d *NVMLDevice) Clocks() (Clocks, error) {
	c := Clocks{At: time.Now()}
	sm, r := d.h.GetClockInfo(nvml.CLOCK_SM)
	if r != nvml.SUCCESS {
		return c, nvmlErr("nvmlDeviceGetClockInfo(sm)", r)
	}
	mem, r := d.h.GetClockInfo(nvml.CLOCK_MEM)
	if r != nvml.SUCCESS {
		return c, nvmlErr("nvmlDeviceGetClockInfo(mem)", r)
	}
	temp, r := d.h.GetTemperature(nvml.TEMPERATURE_GPU)
	if r != nvml.SUCCESS {
		return c, nvmlErr("nvmlDeviceGetTemperature", r)
	}
	mask, r := d.h.GetCurrentClocksEventReasons()
	if r != nvml.SUCCESS {
		return c, nvmlErr("nvmlDeviceGetCurrentClocksEventReasons", r)
	}
	c.SMMHz, c.MemMHz, c.TempC = int(sm), int(mem), int(temp)
	c.Reasons, c.Throttled = ClockReasons(mask)
	return c, nil
}
