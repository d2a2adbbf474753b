package variants

import "testing"

// putScaleMinK4 must be the exact inverse of getScaleMinK4 for all 6-bit
// values in every sub-block position, both packing branches included.
func TestScaleMinK4Packing(t *testing.T) {
	for j := 0; j < 8; j++ {
		for v := 0; v < 64; v++ {
			var q [12]byte
			sc, m := uint8(v), uint8(63-v)
			// Fill the other sub-blocks too, so cross-talk would show.
			for o := 0; o < 8; o++ {
				if o != j {
					putScaleMinK4(o, uint8(o*7+1)&63, uint8(o*5+2)&63, q[:])
				}
			}
			putScaleMinK4(j, sc, m, q[:])
			if gs, gm := getScaleMinK4(j, q[:]); gs != sc || gm != m {
				t.Fatalf("sub-block %d: put (%d, %d), got (%d, %d)", j, sc, m, gs, gm)
			}
			for o := 0; o < 8; o++ {
				if o == j {
					continue
				}
				if gs, gm := getScaleMinK4(o, q[:]); gs != uint8(o*7+1)&63 || gm != uint8(o*5+2)&63 {
					t.Fatalf("writing sub-block %d changed sub-block %d: (%d, %d)", j, o, gs, gm)
				}
			}
		}
	}
}
