#include "textflag.h"

// func dotI8AVX2(q []int16, c []int8) int32
// Requires len(q) >= len(c) and AVX2 (checked by the caller). 16 codes at a time are sign-extended to
// int16 (VPMOVSXBW) and multiplied with the query's int16 pairs, each pair summed into an int32 lane
// (VPMADDWD); four accumulators hide the latency. The tail runs one element at a time.
TEXT ·dotI8AVX2(SB), NOSPLIT, $0-52
	MOVQ q_base+0(FP), SI
	MOVQ c_base+24(FP), DI
	MOVQ c_len+32(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

loop64:
	CMPQ CX, $64
	JL   loop16
	VPMOVSXBW (DI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMOVSXBW 32(DI), Y6
	VPMOVSXBW 48(DI), Y7
	VPMADDWD (SI), Y4, Y4
	VPMADDWD 32(SI), Y5, Y5
	VPMADDWD 64(SI), Y6, Y6
	VPMADDWD 96(SI), Y7, Y7
	VPADDD Y4, Y0, Y0
	VPADDD Y5, Y1, Y1
	VPADDD Y6, Y2, Y2
	VPADDD Y7, Y3, Y3
	ADDQ $64, DI
	ADDQ $128, SI
	SUBQ $64, CX
	JMP  loop64

loop16:
	CMPQ CX, $16
	JL   reduce
	VPMOVSXBW (DI), Y4
	VPMADDWD (SI), Y4, Y4
	VPADDD Y4, Y0, Y0
	ADDQ $16, DI
	ADDQ $32, SI
	SUBQ $16, CX
	JMP  loop16

reduce:
	VPADDD Y1, Y0, Y0
	VPADDD Y3, Y2, Y2
	VPADDD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX

tail:
	CMPQ CX, $0
	JE   done
	MOVBQSX (DI), BX
	MOVWQSX (SI), DX
	IMULQ DX, BX
	ADDL BX, AX
	INCQ DI
	ADDQ $2, SI
	DECQ CX
	JMP  tail

done:
	VZEROUPPER
	MOVL AX, ret+48(FP)
	RET
