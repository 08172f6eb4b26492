package extract

import (
	"bytes"
	"compress/zlib"
	"io"
)

var (
	kwStream    = []byte("stream")
	kwEndstream = []byte("endstream")
	kwObj       = []byte("obj")
	imageMarks  = [][]byte{[]byte("/Image"), []byte("/DCTDecode"), []byte("/JPXDecode"), []byte("/CCITTFaxDecode"), []byte("/JBIG2Decode")}
	kwFlate     = []byte("/FlateDecode")
)

// pdfContentBytes is, as far as the file's bytes show, how much PDFium parses and lays out beyond the
// file itself: the length of every stream that is not an image (page content, fonts, object streams),
// inflated when it is Flate-compressed, counting at most limit. Images are left out: extracting text
// does not decode them, so a scanned or photo-heavy PDF costs little more than its bytes. It reads no
// PDF structure (no xref, no objects): a stream is what lies between "stream" and "endstream", its
// dictionary what follows the last "obj" before it. A file it misreads is estimated by its other
// terms; the WebAssembly memory cap (Limits.PDFMemory) still bounds the parse.
func pdfContentBytes(data []byte, limit int64) int64 {
	var total int64
	var inf inflater
	for pos := 0; total < limit; {
		i := bytes.Index(data[pos:], kwStream)
		if i < 0 {
			break
		}
		at := pos + i
		pos = at + len(kwStream)
		if at >= 3 && string(data[at-3:at]) == "end" { // "endstream" of a stream not seen as one
			continue
		}
		dict := data[max(0, at-1024):at]
		if j := bytes.LastIndex(dict, kwObj); j >= 0 {
			dict = dict[j:]
		}
		switch {
		case bytes.HasPrefix(data[pos:], []byte("\r\n")):
			pos += 2
		case bytes.HasPrefix(data[pos:], []byte("\n")), bytes.HasPrefix(data[pos:], []byte("\r")):
			pos++
		}
		end := bytes.Index(data[pos:], kwEndstream)
		if end < 0 {
			end = len(data) - pos
		}
		raw := data[pos : pos+end]
		pos += end // past the body, so bytes inside it are never taken for keywords
		if isImageDict(dict) {
			continue
		}
		if bytes.Contains(dict, kwFlate) {
			if n, ok := inf.inflated(raw, limit-total); ok {
				total += n
				continue
			}
		}
		total += int64(len(raw))
	}
	return min(total, limit)
}

func isImageDict(dict []byte) bool {
	for _, m := range imageMarks {
		if bytes.Contains(dict, m) {
			return true
		}
	}
	return false
}

// inflater counts a stream's inflated bytes with one decompressor reset per stream: a PDF has thousands
// of streams, and a new zlib reader each (its window and tables) was churn before the budget's reservation.
type inflater struct {
	src bytes.Reader
	zr  io.ReadCloser
}

func (f *inflater) inflated(raw []byte, limit int64) (int64, bool) {
	f.src.Reset(raw)
	if f.zr == nil {
		zr, err := zlib.NewReader(&f.src)
		if err != nil {
			return 0, false
		}
		f.zr = zr
	} else if err := f.zr.(zlib.Resetter).Reset(&f.src, nil); err != nil {
		return 0, false
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(f.zr, limit))
	return n, true
}
