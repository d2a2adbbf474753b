//go:build !cgo

package gpu

import "fmt"

// NVML is unavailable in a build without cgo (go-nvml needs it).
type NVML struct{}

// OpenNVML returns ErrNoNVML: this binary was built with CGO_ENABLED=0.
func OpenNVML() (*NVML, error) {
	return nil, fmt.Errorf("%w: built without cgo", ErrNoNVML)
}

// Close does nothing.
func (n *NVML) Close() error { return nil }

// DriverVersion is unavailable without cgo.
func (n *NVML) DriverVersion() (string, error) { return "", ErrNoNVML }

// NVMLDevice is unavailable without cgo.
type NVMLDevice struct{}

// Device is unavailable without cgo.
func (n *NVML) Device(uuid string) (*NVMLDevice, error) { return nil, ErrNoNVML }

// Info is unavailable without cgo.
func (d *NVMLDevice) Info() (NVMLInfo, error) { return NVMLInfo{}, ErrNoNVML }

// Clocks is unavailable without cgo.
func (d *NVMLDevice) Clocks() (Clocks, error) { return Clocks{}, ErrNoNVML }
