package cache_test

import (
	"errors"
	"testing"

	"github.com/gemvtune/gemvtune/cache"
)

func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"schema":2,"arch":"sm_90","gpu_model":"h200","format":"q4_0","rows":4096,"cols":4096,"winner":"v1","params":{"R":1,"F":0,"U":1,"S":0,"W":8,"L":0},"class":"exact","layout":0}`))
	f.Add([]byte(`{"schema":3}`))
	f.Add([]byte(`{"schema":2,"candidates":[{"id":"v1"}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte{0xff, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := cache.DecodeRecord(data)
		if err != nil {
			if !errors.Is(err, cache.ErrBadRecord) {
				t.Fatalf("error %v is not ErrBadRecord", err)
			}
			return
		}
		if r.Schema != cache.SchemaVersion {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("decoded record does not validate: %v", err)
		}
		// A valid record re-encodes and decodes to the same summary.
		enc, err := r.Encode()
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		r2, err := cache.DecodeRecord(enc)
		if err != nil || r2.Key != r.Key || r2.Params != r.Params || r2.Class != r.Class || !r2.Time.Equal(r.Time) {
			t.Fatalf("re-decode: %+v, %v; want %+v", r2, err, r)
		}
	})
}
