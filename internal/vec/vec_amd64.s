//go:build amd64 && !purego

#include "textflag.h"

// func dot4AVX2(a, b, c, d, y *float64, n int) (ra, rb, rc, rd float64)
//
// Eight accumulators, two per vector, eight entries per iteration: y's
// entries are loaded once for the four products.
TEXT ·dot4AVX2(SB), NOSPLIT, $0-80
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	MOVQ c+16(FP), CX
	MOVQ d+24(FP), DX
	MOVQ y+32(FP), SI
	MOVQ n+40(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	XORQ R8, R8
	TESTQ DI, DI
	JE   dot4sum

dot4loop:
	VMOVUPD     (SI)(R8*8), Y8
	VMOVUPD     32(SI)(R8*8), Y9
	VFMADD231PD (AX)(R8*8), Y8, Y0
	VFMADD231PD 32(AX)(R8*8), Y9, Y4
	VFMADD231PD (BX)(R8*8), Y8, Y1
	VFMADD231PD 32(BX)(R8*8), Y9, Y5
	VFMADD231PD (CX)(R8*8), Y8, Y2
	VFMADD231PD 32(CX)(R8*8), Y9, Y6
	VFMADD231PD (DX)(R8*8), Y8, Y3
	VFMADD231PD 32(DX)(R8*8), Y9, Y7
	ADDQ        $8, R8
	CMPQ        R8, DI
	JLT         dot4loop

dot4sum:
	VADDPD       Y4, Y0, Y0
	VADDPD       Y5, Y1, Y1
	VADDPD       Y6, Y2, Y2
	VADDPD       Y7, Y3, Y3
	VEXTRACTF128 $1, Y0, X4
	VEXTRACTF128 $1, Y1, X5
	VEXTRACTF128 $1, Y2, X6
	VEXTRACTF128 $1, Y3, X7
	VADDPD       X4, X0, X0
	VADDPD       X5, X1, X1
	VADDPD       X6, X2, X2
	VADDPD       X7, X3, X3
	VHADDPD      X0, X0, X0
	VHADDPD      X1, X1, X1
	VHADDPD      X2, X2, X2
	VHADDPD      X3, X3, X3
	VMOVSD       X0, ra+48(FP)
	VMOVSD       X1, rb+56(FP)
	VMOVSD       X2, rc+64(FP)
	VMOVSD       X3, rd+72(FP)
	VZEROUPPER
	RET

// func addScaled4AVX2(dst *float64, wa, wb, wc, wd float64, a, b, c, d *float64, n int)
//
// Four entries per iteration: dst's are loaded and stored once for the
// four updates.
TEXT ·addScaled4AVX2(SB), NOSPLIT, $0-80
	MOVQ         dst+0(FP), DI
	VBROADCASTSD wa+8(FP), Y8
	VBROADCASTSD wb+16(FP), Y9
	VBROADCASTSD wc+24(FP), Y10
	VBROADCASTSD wd+32(FP), Y11
	MOVQ         a+40(FP), AX
	MOVQ         b+48(FP), BX
	MOVQ         c+56(FP), CX
	MOVQ         d+64(FP), DX
	MOVQ         n+72(FP), SI
	XORQ         R8, R8
	TESTQ        SI, SI
	JE           add4done

add4loop:
	VMOVUPD     (DI)(R8*8), Y0
	VFMADD231PD (AX)(R8*8), Y8, Y0
	VFMADD231PD (BX)(R8*8), Y9, Y0
	VFMADD231PD (CX)(R8*8), Y10, Y0
	VFMADD231PD (DX)(R8*8), Y11, Y0
	VMOVUPD     Y0, (DI)(R8*8)
	ADDQ        $4, R8
	CMPQ        R8, SI
	JLT         add4loop

add4done:
	VZEROUPPER
	RET

// func dot2AVX2(a, b, y *float64, n int) (ra, rb float64)
TEXT ·dot2AVX2(SB), NOSPLIT, $0-48
	MOVQ   a+0(FP), AX
	MOVQ   b+8(FP), BX
	MOVQ   y+16(FP), SI
	MOVQ   n+24(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	XORQ   R8, R8
	TESTQ  DI, DI
	JE     dot2sum

dot2loop:
	VMOVUPD     (SI)(R8*8), Y8
	VMOVUPD     32(SI)(R8*8), Y9
	VFMADD231PD (AX)(R8*8), Y8, Y0
	VFMADD231PD 32(AX)(R8*8), Y9, Y4
	VFMADD231PD (BX)(R8*8), Y8, Y1
	VFMADD231PD 32(BX)(R8*8), Y9, Y5
	ADDQ        $8, R8
	CMPQ        R8, DI
	JLT         dot2loop

dot2sum:
	VADDPD       Y4, Y0, Y0
	VADDPD       Y5, Y1, Y1
	VEXTRACTF128 $1, Y0, X4
	VEXTRACTF128 $1, Y1, X5
	VADDPD       X4, X0, X0
	VADDPD       X5, X1, X1
	VHADDPD      X0, X0, X0
	VHADDPD      X1, X1, X1
	VMOVSD       X0, ra+32(FP)
	VMOVSD       X1, rb+40(FP)
	VZEROUPPER
	RET

// func addScaled2AVX2(dst *float64, wa, wb float64, a, b *float64, n int)
TEXT ·addScaled2AVX2(SB), NOSPLIT, $0-48
	MOVQ         dst+0(FP), DI
	VBROADCASTSD wa+8(FP), Y8
	VBROADCASTSD wb+16(FP), Y9
	MOVQ         a+24(FP), AX
	MOVQ         b+32(FP), BX
	MOVQ         n+40(FP), SI
	XORQ         R8, R8
	TESTQ        SI, SI
	JE           add2done

add2loop:
	VMOVUPD     (DI)(R8*8), Y0
	VFMADD231PD (AX)(R8*8), Y8, Y0
	VFMADD231PD (BX)(R8*8), Y9, Y0
	VMOVUPD     Y0, (DI)(R8*8)
	ADDQ        $4, R8
	CMPQ        R8, SI
	JLT         add2loop

add2done:
	VZEROUPPER
	RET

// func finiteSumAVX2(x *float64, n int) float64
//
// Σ (xᵢ − xᵢ) over n entries, n a multiple of 8: +0 when every entry is
// finite, NaN otherwise (∞ − ∞ and NaN − NaN are NaN, and NaN absorbs).
TEXT ·finiteSumAVX2(SB), NOSPLIT, $0-24
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	XORQ   R8, R8
	TESTQ  DI, DI
	JE     finsum

finloop:
	VMOVUPD (SI)(R8*8), Y2
	VMOVUPD 32(SI)(R8*8), Y3
	VSUBPD  Y2, Y2, Y2
	VSUBPD  Y3, Y3, Y3
	VADDPD  Y2, Y0, Y0
	VADDPD  Y3, Y1, Y1
	ADDQ    $8, R8
	CMPQ    R8, DI
	JLT     finloop

finsum:
	VADDPD       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0
	VMOVSD       X0, ret+16(FP)
	VZEROUPPER
	RET
