#include "textflag.h"

// Nibble popcount table (VPSHUFB looks up each 4-bit half of a byte) and the low-nibble mask.
DATA nibbleCount<>+0x00(SB)/8, $0x0302020102010100
DATA nibbleCount<>+0x08(SB)/8, $0x0403030203020201
DATA nibbleCount<>+0x10(SB)/8, $0x0302020102010100
DATA nibbleCount<>+0x18(SB)/8, $0x0403030203020201
GLOBL nibbleCount<>(SB), RODATA|NOPTR, $32

DATA lowNibble<>+0x00(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lowNibble<>+0x08(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lowNibble<>+0x10(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA lowNibble<>+0x18(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL lowNibble<>(SB), RODATA|NOPTR, $32

// func hammingRowsAVX2(q []uint64, codes []uint64, w int, out []int32)
// out[r] = popcount(q XOR codes[r*w:(r+1)*w]) for every r < len(out). Requires AVX2, w a positive
// multiple of 4 (32 bytes) and at most 124 (a byte lane counts at most 8 bits per 32-byte step, 2w in
// all, and must stay below 256), len(q) >= w and len(codes) >= len(out)*w (checked by the caller). Per
// 32 bytes: XOR, split into nibbles, look both up in the table (VPSHUFB), add the byte counts; per row
// the bytes are summed by VPSADBW and the four lanes folded.
TEXT ·hammingRowsAVX2(SB), NOSPLIT, $0-80
	MOVQ q_base+0(FP), SI
	MOVQ codes_base+24(FP), DI
	MOVQ w+48(FP), R8
	MOVQ out_base+56(FP), R9
	MOVQ out_len+64(FP), R10
	VMOVDQU nibbleCount<>(SB), Y14
	VMOVDQU lowNibble<>(SB), Y15
	VPXOR Y13, Y13, Y13
	TESTQ R10, R10
	JZ done

row:
	VPXOR Y0, Y0, Y0
	MOVQ R8, CX
	MOVQ SI, R11

step:
	VMOVDQU (R11), Y1
	VPXOR (DI), Y1, Y1
	VPAND Y15, Y1, Y2
	VPSRLW $4, Y1, Y3
	VPAND Y15, Y3, Y3
	VPSHUFB Y2, Y14, Y2
	VPSHUFB Y3, Y14, Y3
	VPADDB Y2, Y0, Y0
	VPADDB Y3, Y0, Y0
	ADDQ $32, R11
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ step

	VPSADBW Y13, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPADDQ X1, X0, X0
	MOVQ X0, AX
	MOVL AX, (R9)
	ADDQ $4, R9
	DECQ R10
	JNZ row

done:
	VZEROUPPER
	RET
