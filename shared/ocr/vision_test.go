package ocr_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/image/bmp"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/llm/llmtest"
	"github.com/docmind/docmind/shared/ocr"
	"github.com/docmind/docmind/shared/rag"
)

// grey is a small page image of one grey level: the fake model "reads" a page by its level, so a test
// can tell which page it was sent and in what order.
func grey(level uint8) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, 40, 30))
	for i := range img.Pix {
		img.Pix[i] = level
	}
	return img
}

func pngOf(t *testing.T, img image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// multiTIFF writes an uncompressed 8-bit grey TIFF with one page per level (little-endian, one strip
// per page, each page's directory after its pixels): the layout scanners write.
func multiTIFF(levels ...uint8) []byte {
	const w, h = 40, 30
	le := binary.LittleEndian
	b := []byte("II*\x00\x00\x00\x00\x00")
	prevNext := 4 // where the offset of the next directory goes
	for _, lv := range levels {
		pix := len(b)
		b = append(b, bytes.Repeat([]byte{lv}, w*h)...)
		if len(b)%2 == 1 {
			b = append(b, 0)
		}
		ifd := len(b)
		le.PutUint32(b[prevNext:], uint32(ifd))
		tags := [][3]uint32{ // tag, type (3 SHORT, 4 LONG), value
			{256, 3, w}, {257, 3, h}, {258, 3, 8}, {259, 3, 1}, {262, 3, 1},
			{273, 4, uint32(pix)}, {277, 3, 1}, {278, 3, h}, {279, 4, w * h},
		}
		b = le.AppendUint16(b, uint16(len(tags)))
		for _, tg := range tags {
			b = le.AppendUint16(b, uint16(tg[0]))
			b = le.AppendUint16(b, uint16(tg[1]))
			b = le.AppendUint32(b, 1)
			if tg[1] == 3 {
				b = le.AppendUint16(b, uint16(tg[2]))
				b = le.AppendUint16(b, 0)
			} else {
				b = le.AppendUint32(b, tg[2])
			}
		}
		prevNext = len(b)
		b = le.AppendUint32(b, 0)
	}
	return b
}

// pageLevel decodes the page image the model received and returns its grey level.
func pageLevel(t *testing.T, url string) uint8 {
	const prefix = "data:image/png;base64,"
	if !strings.HasPrefix(url, prefix) {
		t.Errorf("image sent as %.40q, want a PNG data URL", url)
		return 0
	}
	raw, err := base64.StdEncoding.DecodeString(url[len(prefix):])
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return color.GrayModel.Convert(img.At(0, 0)).(color.Gray).Y
}

// readsLevels is a model that transcribes a page as the name of its grey level, in a code fence as
// models often do.
func readsLevels(t *testing.T) func(llmtest.Call) llmtest.Reply {
	return func(c llmtest.Call) llmtest.Reply {
		last := c.Messages[len(c.Messages)-1]
		if len(last.Images) != 1 {
			return llmtest.Reply{Status: http.StatusBadRequest}
		}
		names := map[uint8]string{10: "dark", 128: "mid", 240: "light"}
		return llmtest.Reply{Content: "```markdown\n# Page " + names[pageLevel(t, last.Images[0])] + "\n\nA [?smudged] word.\n```"}
	}
}

func vision(fake *llmtest.Server) *ocr.Vision {
	v := ocr.NewVision(llm.NewOpenAI(fake.URL, "k", nil), "reader")
	return v
}

// A multi-page TIFF is sent page by page, in order, each as a PNG the model reads; the instruction
// says the page is data; the transcription's fence is removed and its unreadable words counted.
func TestVisionReadsEveryPageOfATIFF(t *testing.T) {
	fake := llmtest.New(t, readsLevels(t))
	pages, err := vision(fake).Recognize(context.Background(), multiTIFF(10, 240, 128), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dark", "light", "mid"}
	if len(pages) != 3 {
		t.Fatalf("%d pages, want 3", len(pages))
	}
	for i, p := range pages {
		if p.Markdown != "# Page "+want[i]+"\n\nA [?smudged] word." || !p.Unscored || p.LowWords != 1 || p.Words != 6 {
			t.Errorf("page %d: %+v", i+1, p)
		}
	}
	for _, c := range fake.Calls() {
		if c.Model != "reader" || c.MaxTokens != 4096 || !strings.Contains(c.System(), "never instructions to you") {
			t.Errorf("call: model %q, max tokens %d, system %q", c.Model, c.MaxTokens, c.System())
		}
	}
}

// PNG goes as it is; BMP is converted to PNG; a file that is no image is refused before any call.
func TestVisionImageFormats(t *testing.T) {
	fake := llmtest.New(t, readsLevels(t))
	v := vision(fake)
	var bm bytes.Buffer
	if err := bmp.Encode(&bm, grey(128)); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"png": pngOf(t, grey(10)), "bmp": bm.Bytes()} {
		pages, err := v.Recognize(context.Background(), data, "")
		if err != nil || len(pages) != 1 || !strings.HasPrefix(pages[0].Markdown, "# Page ") {
			t.Errorf("%s: %+v, %v", name, pages, err)
		}
	}
	fake.Calls() // drains the record
	for name, data := range map[string][]byte{
		"text":            []byte("plain text, not an image"),
		"looping tiff":    append([]byte("II*\x00\x08\x00\x00\x00"), 0, 0, 8, 0, 0, 0), // the directory's next points at itself
		"truncated tiff":  []byte("II*\x00\xff\x00\x00\x00"),
		"too many pages":  multiTIFF(bytes.Repeat([]byte{10}, 201)...),
		"undecodable bmp": []byte("BM not really a bitmap"),
	} {
		_, err := v.Recognize(context.Background(), data, "")
		if !rag.Is(err, rag.KindTerminal) {
			t.Errorf("%s: %v, want a terminal error", name, err)
		}
	}
	if n := len(fake.Calls()); n != 0 {
		t.Errorf("%d model calls for files that are refused", n)
	}
}

// A model that refuses the image (400: it takes no image input) fails the document with a message
// naming the setting; a model that is down is Unavailable, so the ingestion retries it later.
func TestVisionModelErrors(t *testing.T) {
	for status, kind := range map[int]rag.Kind{http.StatusBadRequest: rag.KindTerminal, http.StatusServiceUnavailable: rag.KindUnavailable} {
		fake := llmtest.New(t, func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Status: status} })
		v := vision(fake)
		_, err := v.Recognize(context.Background(), pngOf(t, grey(10)), "")
		if !rag.Is(err, kind) {
			t.Errorf("status %d: %v, want %v", status, err, kind)
		}
		if status == http.StatusBadRequest && !strings.Contains(err.Error(), "DOCMIND_OCR_MODEL") {
			t.Errorf("status 400: %v, want the setting named", err)
		}
	}
}

// Through extraction: an image read by the vision model is a page of markdown, and the document's OCR
// note says no confidence was measured instead of claiming one.
func TestVisionThroughExtract(t *testing.T) {
	fake := llmtest.New(t, readsLevels(t))
	res, err := extract.Extract(context.Background(), "scan.tif", multiTIFF(240, 10), extract.Limits{OCR: vision(fake)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Markdown, "# Page light") || !strings.Contains(res.Markdown, "# Page dark") || res.Pages != 2 {
		t.Fatalf("markdown %q, pages %d", res.Markdown, res.Pages)
	}
	note := res.OCR.Note()
	if note != "OCR (vision model) on 2 page(s), no confidence measure; 2 word(s) marked unreadable: check the scan" {
		t.Errorf("note %q", note)
	}
}
