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
