//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// Limb products on AMX tiles (amx_amd64.s): the integer sums H, M and L
// of 16 rows at once by TDPBSUD (signed limbs times unsigned stored
// integers), then the same float steps, in the same order, as the VNNI
// kernels (limbs_amd64.h's JOIN), so every output has the same bits. The
// tiles do a group's 3·16·16·32 multiply-adds in three instructions where
// VPDPBUSD takes 24 per row and strip; what is left is the joining, a
// third of the VNNI kernel's work (scripts/bench/notes/42-amx.md).
//
// Only 8-bit integers without offsets (Q8_0) and weight groups of 32 take
// this path: the stored blocks are already in the tiles' layout (a quad of
// rows is 4 bytes of each column, the 16 columns of a strip 64 bytes), so
// a strip of a group is one tile load with a stride of 256 bytes.

// useAMX: the CPU has AMX tiles and int8 products, the kernel grants this
// process the tile data (Linux asks to be asked: arch_prctl), and
// LLORCH_KERNELS is not "avx512" (which keeps the VNNI kernels, to
// compare).
var useAMX = useVNNI && cpu.X86.HasAMXTile && cpu.X86.HasAMXInt8 &&
	kernelsEnv != "avx512" && requestTileData()

//go:noescape
func limbsQ8AMX(y *float32, ystride int, q *byte, rec *byte, recStride int, s *float32, cbuf *byte, cfg *byte, groups int)

// amxTiles is the tile configuration limbsQ8AMX loads (LDTILECFG's 64
// bytes): tiles 0-2 the int32 sums (16 rows × 16 columns), tile 3 a strip
// of a group's integers (8 quads × 16 columns × 4 bytes), tiles 4-6 the
// rows' h, m and l limbs (16 rows × 32 bytes).
var amxTiles = func() (cfg [64]byte) {
	cfg[0] = 1 // palette 1
	set := func(tile, rows, bytes int) {
		cfg[16+2*tile] = byte(bytes)
		cfg[48+tile] = byte(rows)
	}
	for t := range 3 {
		set(t, 16, 64)
		set(4+t, 16, limbRows)
	}
	set(3, limbRows/4, 64)
	return cfg
}()

// limbRowsAMX adds the products of rec's rows with the whole slab at
// column c0 to dst on the tiles, 16 rows at a time, and says how many
// rows it did (none for a matrix or CPU the tiles do not take). Fewer
// rows are left to the VNNI kernels: with 4 rows (a batch's decode step)
// the tiles were slower than those, with 8 level (notes 42).
func (w *quant) limbRowsAMX(dst []float32, rec []byte, M, N int, s []float32, c0 int) int {
	if !useAMX || w.bits != 8 || w.dm != nil || w.g.Size != limbRows {
		return 0
	}
	per := w.k / limbRows * limbRecord
	blocks, groups, _ := limbOperands(w, s, nil, c0)
	var cbuf [2 * 3 * 16 * 16]int32
	cfg := amxTiles
	i := 0
	for ; i+16 <= M; i += 16 {
		_ = rec[(i+16)*per-1]
		_ = dst[(i+15)*N+c0+slab-1]
		for st := 0; st < slab; st += 16 { // the slab's four strips
			limbsQ8AMX(&dst[i*N+c0+st], 4*N, &blocks[4*st], &rec[i*per], per, &s[st],
				(*byte)(unsafe.Pointer(&cbuf[0])), &cfg[0], groups)
		}
	}
	return i
}
