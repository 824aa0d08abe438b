//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// useAVXVNNI: the AVX2 limb kernels with VPDPBUSD on 256-bit vectors
// (limbs_avxvnni_amd64.s), for CPUs with AVX-VNNI and without AVX-512
// VNNI (Intel's client cores since Alder Lake and its E-core Xeons; Zen 5
// under LLORCH_KERNELS=avxvnni). LLORCH_KERNELS=avx2 leaves them out, to
// run what a CPU with neither runs. The AVX-512 kernels come first where
// both exist.
var useAVXVNNI = useAVX2 && !useVNNI && cpu.X86.HasAVXVNNI && kernelsEnv != "avx2"

//go:noescape
func limbsQ4AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ5AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ6AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ8AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsU8AVXVNNI(y *float32, q *byte, rec *byte, s, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ4HAVXVNNI(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ5HAVXVNNI(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ8HAVXVNNI(y *float32, q *byte, rec *byte, s *uint16, o *float32, acc *float32, groups, half int)

//go:noescape
func limbsQ4FAVXVNNI(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)

//go:noescape
func limbsQ5FAVXVNNI(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)

//go:noescape
func limbsQ6FAVXVNNI(y *float32, q *byte, rec *byte, a, b *int8, d, dm *uint16, acc *float32, groups, half, per int)
