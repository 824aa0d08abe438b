//go:build amd64 && !purego

#include "textflag.h"

// Float16 kernels: widening binary16 rows to float32 (widenBlock).
// Dispatch in kernels_amd64.go, the pure-Go body in reference.go.

// func widenF16AVX512(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)
//
// dst[r,0:n] = float32(src[r,0:n]) for r < rows (strides in bytes; n a
// multiple of 32). VCVTPH2PS is exact, subnormals and NaNs included.
TEXT ·widenF16AVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+16(FP), SI
	MOVQ rows+32(FP), R8
	MOVQ n+40(FP), DX
	SHLQ $1, DX               // bytes of src per row
	TESTQ R8, R8
	JZ   w512done
	TESTQ DX, DX
	JZ   w512done

w512row:
	XORQ CX, CX

w512loop:
	VCVTPH2PS (SI)(CX*1), Z0
	VCVTPH2PS 32(SI)(CX*1), Z1
	VMOVUPS   Z0, (DI)(CX*2)
	VMOVUPS   Z1, 64(DI)(CX*2)
	ADDQ      $64, CX
	CMPQ      CX, DX
	JL        w512loop

	ADDQ ldsb+24(FP), SI
	ADDQ lddb+8(FP), DI
	DECQ R8
	JNZ  w512row

w512done:
	VZEROUPPER
	RET

// func widenF16F16C(dst *float32, lddb int, src *uint16, ldsb int, rows, n int)
//
// widenF16AVX512 with 256-bit registers (F16C); n a multiple of 16.
TEXT ·widenF16F16C(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+16(FP), SI
	MOVQ rows+32(FP), R8
	MOVQ n+40(FP), DX
	SHLQ $1, DX
	TESTQ R8, R8
	JZ   w256done
	TESTQ DX, DX
	JZ   w256done

w256row:
	XORQ CX, CX

w256loop:
	VCVTPH2PS (SI)(CX*1), Y0
	VCVTPH2PS 16(SI)(CX*1), Y1
	VMOVUPS   Y0, (DI)(CX*2)
	VMOVUPS   Y1, 32(DI)(CX*2)
	ADDQ      $32, CX
	CMPQ      CX, DX
	JL        w256loop

	ADDQ ldsb+24(FP), SI
	ADDQ lddb+8(FP), DI
	DECQ R8
	JNZ  w256row

w256done:
	VZEROUPPER
	RET
