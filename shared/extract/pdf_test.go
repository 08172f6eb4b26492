package extract

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// makePDF writes a minimal valid PDF: one page per entry, each showing its text in Helvetica, with an
// optional extra content stream appended to the first page (for bombs) and an optional /Encrypt entry.
func makePDF(pages []string, extraStream []byte, encrypt bool) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) int {
		offsets = append(offsets, b.Len())
		n := len(offsets)
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", n, body)
		return n
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	catalog := obj("<< /Type /Catalog /Pages 2 0 R >>")
	_ = catalog
	pagesIdx := len(offsets)
	offsets = append(offsets, 0) // placeholder for the page tree (object 2)
	font := obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	var kids []string
	for i, text := range pages {
		content := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", strings.NewReplacer("(", "\\(", ")", "\\)").Replace(text))
		streams := []string{fmt.Sprintf("%d 0 R", obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content)))}
		if i == 0 && extraStream != nil {
			offsets = append(offsets, b.Len())
			n := len(offsets)
			fmt.Fprintf(&b, "%d 0 obj\n<< /Length %d /Filter /FlateDecode >>\nstream\n", n, len(extraStream))
			b.Write(extraStream)
			b.WriteString("\nendstream\nendobj\n")
			streams = append(streams, fmt.Sprintf("%d 0 R", n))
		}
		p := obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents [%s] >>", font, strings.Join(streams, " ")))
		kids = append(kids, fmt.Sprintf("%d 0 R", p))
	}
	offsets[pagesIdx] = b.Len()
	fmt.Fprintf(&b, "2 0 obj\n<< /Type /Pages /Kids [%s] /Count %d >>\nendobj\n", strings.Join(kids, " "), len(pages))
	enc := ""
	if encrypt {
		e := obj("<< /Filter /Standard /V 2 /R 3 /Length 128 /P -3904 /O <00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff> /U <00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff> >>")
		enc = fmt.Sprintf(" /Encrypt %d 0 R /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]", e)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, enc, xref)
	return b.Bytes()
}

func TestPDFPagesAndText(t *testing.T) {
	res := mustExtract(t, "three.pdf", makePDF([]string{"First page text.", "Second page, about refunds.", "Third page."}, nil, false))
	if res.Pages != 3 {
		t.Fatalf("pages %d", res.Pages)
	}
	for i, want := range []string{"First page text.", "Second page, about refunds.", "Third page."} {
		marker := PageMarker(i + 1)
		at := strings.Index(res.Markdown, marker)
		if at < 0 || !strings.Contains(res.Markdown[at:], want) {
			t.Errorf("page %d: marker or text missing:\n%s", i+1, res.Markdown)
		}
	}
}

// PAR-05: a malformed-PDF corpus. Every file ends as text or a Terminal error within the deadline;
// none crashes the process or returns another kind. The counts are the test's report.
func TestMalformedPDFCorpus(t *testing.T) {
	good := makePDF([]string{"Alpha page.", "Beta page."}, nil, false)
	corpus := map[string][]byte{}
	for i, cut := range []int{20, 100, len(good) / 3, len(good) / 2, len(good) - 40, len(good) - 5} {
		corpus[fmt.Sprintf("truncated-%d", i)] = good[:cut]
	}
	r := rand.New(rand.NewPCG(3, 3))
	for i := range 20 {
		c := bytes.Clone(good)
		for range 5 {
			c[r.IntN(len(c))] ^= byte(1 + r.IntN(255))
		}
		corpus[fmt.Sprintf("flipped-%d", i)] = c
	}
	corpus["bad xref"] = bytes.Replace(good, []byte("xref\n0 "), []byte("xref\n9 "), 1)
	corpus["invalid filter"] = bytes.Replace(makePDF([]string{"x"}, []byte("not zlib data"), false), []byte("/FlateDecode"), []byte("/NoSuchDecode"), 1)
	var bomb bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&bomb, zlib.BestCompression)
	zero := make([]byte, 1<<20)
	for range 256 { // 256 MiB of zeros in a content stream
		zw.Write(zero)
	}
	zw.Close()
	corpus["flate bomb"] = makePDF([]string{"Bomb page."}, bomb.Bytes(), false)
	corpus["encrypted"] = makePDF([]string{"Secret."}, nil, true)
	many := make([]string, 2001)
	for i := range many {
		many[i] = "p"
	}
	corpus["2001 pages"] = makePDF(many, nil, false)

	var ok, terminal, crash, timeout int
	for name, data := range corpus {
		start := time.Now()
		res, err := Extract(context.Background(), name+".pdf", data, Limits{Timeout: 30 * time.Second})
		switch {
		case err == nil:
			ok++
			if !strings.Contains(res.Markdown, "page") && !strings.Contains(res.Markdown, "Page") {
				t.Logf("%s: extracted %q", name, res.Markdown)
			}
		case rag.Is(err, rag.KindTerminal) && strings.Contains(err.Error(), "longer than"):
			timeout++
		case rag.Is(err, rag.KindTerminal):
			terminal++
			if strings.Contains(err.Error(), "crashed") {
				crash++
			}
		default:
			crash++
			t.Errorf("%s: %v (kind %v): neither text nor Terminal", name, err, rag.KindOf(err))
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Logf("%s took %v", name, d)
		}
	}
	t.Logf("PAR-05 malformed PDFs: n=%d ok=%d terminal=%d timeout=%d crash=%d", len(corpus), ok, terminal, timeout, crash)
	if _, err := Extract(context.Background(), "e.pdf", corpus["encrypted"], Limits{}); err == nil || !strings.Contains(err.Error(), "encrypted") && !strings.Contains(err.Error(), "cannot be opened") {
		t.Errorf("encrypted PDF: %v", err)
	}
	if _, err := Extract(context.Background(), "m.pdf", corpus["2001 pages"], Limits{}); err == nil || !strings.Contains(err.Error(), "2001 pages") {
		t.Errorf("2001-page PDF with a 2000-page limit: %v", err)
	}
}
