package memvec

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// nativeLE reports a little-endian machine, where the snapshot's little-endian float32 section is used in
// place (mapped) rather than decoded.
var nativeLE = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// float32Bytes views v as its little-endian bytes (on a big-endian machine, a little-endian copy).
func float32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	if nativeLE {
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
	}
	out := make([]byte, 0, len(v)*4)
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return out
}

func int8Bytes(v []int8) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v))
}

// asFloat32 views b (little endian, 4-byte aligned: the map is page-aligned and the section starts on a
// page) as float32s. Only used when nativeLE.
func asFloat32(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

func asInt8(b []byte) []int8 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(&b[0])), len(b))
}

// decodeFloat32 copies little-endian float32s onto the heap.
func decodeFloat32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
	}
	return out
}

// uint64Bytes views v as its little-endian bytes (on a big-endian machine, a little-endian copy).
func uint64Bytes(v []uint64) []byte {
	if len(v) == 0 {
		return nil
	}
	if nativeLE {
		return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8)
	}
	out := make([]byte, 0, len(v)*8)
	for _, x := range v {
		out = binary.LittleEndian.AppendUint64(out, x)
	}
	return out
}

// asUint64 views b (little endian, 8-byte aligned: the section is padded to 8 in a page-aligned map) as
// uint64s. Only used when nativeLE.
func asUint64(b []byte) []uint64 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// decodeUint64 copies little-endian uint64s onto the heap.
func decodeUint64(b []byte) []uint64 {
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[i*8:])
	}
	return out
}
