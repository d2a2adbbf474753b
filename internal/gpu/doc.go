// Package gpu is gemvtune's only door to the GPU: the CUDA driver API and
// NVRTC, loaded at run time through purego (no CUDA headers, no cgo for
// CUDA, so everything builds on a machine without CUDA), and NVML through
// go-nvml for clocks, temperatures and throttle reasons.
//
// The types a caller needs:
//
//   - [Probe] and [DriverVersion] describe the driver and its GPUs ([Info]).
//   - [FindNVRTC] loads every distinct NVRTC library on the machine;
//     [ChooseNVRTC] picks the newest that can build a given [Arch], and
//     [NVRTC.Compile] turns CUDA source into a cubin.
//   - [Open] returns a [Device]. A CUDA context belongs to an OS thread, so a
//     Device owns one goroutine locked to its thread; every driver call runs
//     there. [Device.Do] runs a function on it with a [Ctx], which has the raw
//     operations (memory, modules, launches, streams, events, graphs). A
//     timing loop issues thousands of launches inside one Do call.
//   - [OpenNVML] and [Clocks] snapshot clocks and clock-event reasons around
//     a measurement.
//
// Errors: [ErrNoDriver], [ErrNoDevice], [ErrNoNVRTC], [ErrNoNVML] and
// [ErrTimeout] are sentinels for errors.Is; a failing driver call returns a
// [*CUDAError] carrying the call, the code and its name, e.g.
// "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)". A sticky error such as an
// illegal address (700) poisons the context: see [CUDAError.Sticky].
//
// Nothing outside this package imports purego or knows about OS threads.
package gpu
