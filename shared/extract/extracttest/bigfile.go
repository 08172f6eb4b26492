// Package extracttest builds large files of every format extract reads, with the structure real
// documents have, for measuring what extraction costs (memory per input byte) and for load tests.
// Only tests and measurement tools use it.
package extracttest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"sort"
	"strings"

	"github.com/docmind/docmind/shared/extract/ooxmltest"
)

// BigFile builds a file of about size bytes in the format of ext, with the structure real documents
// of that format have (headings, paragraphs, tables, mixed Latin and CJK text), for measuring what
// extraction costs per input byte. PDFs are measured per file byte; OOXML files per declared
// uncompressed XML byte (see memoryInput), so their compressed size matters little.
func BigFile(ext string, size int) []byte {
	sentence := func(i int) string {
		return fmt.Sprintf("Clause %d: the customer may return goods within 30 days of delivery; 退货须在收货后三十天内办理，费用由买方承担。", i)
	}
	var b strings.Builder
	switch ext {
	case ".txt":
		for i := 0; b.Len() < size; i++ {
			b.WriteString(sentence(i) + "\n")
			if i%8 == 7 {
				b.WriteString("\n")
			}
		}
	case ".md":
		for i := 0; b.Len() < size; i++ {
			if i%20 == 0 {
				fmt.Fprintf(&b, "\n## Section %d\n\n", i/20)
			}
			if i%50 == 25 {
				b.WriteString("\n| item | price | note |\n|---|---|---|\n")
				for j := range 10 {
					fmt.Fprintf(&b, "| item %d | %d.00 | 含税价格 |\n", j, j*7)
				}
				b.WriteString("\n")
			}
			b.WriteString(sentence(i) + "\n\n")
		}
	case ".csv":
		b.WriteString("id,region,quarter,revenue,customers,note\n")
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(&b, "%d,North-%d,2026-Q%d,%d,%d,\"备注 %d, with a comma\"\n", i, i%7, i%4+1, i*13%997, i%50, i)
		}
	case ".html":
		b.WriteString("<!doctype html><html><head><title>Big page</title></head><body>")
		for i := 0; b.Len() < size; i++ {
			if i%20 == 0 {
				fmt.Fprintf(&b, "<h2>Section %d</h2>", i/20)
			}
			if i%50 == 25 {
				b.WriteString("<table><tr><th>item</th><th>price</th></tr>")
				for j := range 10 {
					fmt.Fprintf(&b, "<tr><td>item %d</td><td>%d.00</td></tr>", j, j*7)
				}
				b.WriteString("</table>")
			}
			fmt.Fprintf(&b, "<div class=\"c\"><p>%s <b>bold</b> <a href=\"#x\">link</a></p></div>", sentence(i))
		}
		b.WriteString("</body></html>")
	case ".docx":
		for i := 0; b.Len() < size; i++ {
			if i%20 == 0 {
				b.WriteString(ooxmltest.P("Heading1", ooxmltest.R(fmt.Sprintf("Section %d", i/20))))
			}
			b.WriteString(ooxmltest.P("", ooxmltest.R(sentence(i)), ooxmltest.R(" more text in a second run.")))
		}
		return ooxmltest.DOCX(b.String())
	case ".xlsx":
		return xlsx(size)
	case ".pptx":
		var slides []ooxmltest.Slide
		for n := 0; n < size; {
			s := ooxmltest.Slide{Title: fmt.Sprintf("Slide %d", len(slides)+1)}
			for j := range 40 {
				s.Body = append(s.Body, sentence(len(slides)*40+j))
				n += 400 // the XML around a paragraph is about twice its text
			}
			slides = append(slides, s)
		}
		return ooxmltest.PPTX(slides)
	case ".pdf":
		var pages []string
		for n := 0; n < size; n += 5000 {
			pages = append(pages, pageText(len(pages)))
		}
		return PDF(pages)
	default:
		panic("extracttest.BigFile: no generator for " + ext)
	}
	return []byte(b.String())
}

// xlsx is a workbook with one sheet of shared-string and number cells.
func xlsx(size int) []byte {
	var ss, rows strings.Builder
	nStrings := 0
	for r := 1; ss.Len()+rows.Len() < size; r++ {
		fmt.Fprintf(&rows, `<row r="%d">`, r)
		for c := range 6 {
			ref := fmt.Sprintf("%c%d", 'A'+c, r)
			if c%2 == 0 {
				fmt.Fprintf(&ss, `<si><t xml:space="preserve">cell %d 单元格 %d</t></si>`, nStrings, r)
				fmt.Fprintf(&rows, `<c r="%s" t="s"><v>%d</v></c>`, ref, nStrings)
				nStrings++
			} else {
				fmt.Fprintf(&rows, `<c r="%s" t="n"><v>%d</v></c>`, ref, r*c)
			}
		}
		rows.WriteString(`</row>`)
	}
	const ns = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"`
	return ooxmltest.Zip(
		[2]string{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/></Types>`},
		[2]string{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>`},
		[2]string{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8"?><workbook ` + ns + ` xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="data" sheetId="1" state="visible" r:id="rId2"/></sheets></workbook>`},
		[2]string{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>`},
		[2]string{"xl/sharedStrings.xml", `<?xml version="1.0" encoding="UTF-8"?><sst ` + ns + `>` + ss.String() + `</sst>`},
		[2]string{"xl/worksheets/sheet1.xml", `<?xml version="1.0" encoding="UTF-8"?><worksheet ` + ns + `><sheetData>` + rows.String() + `</sheetData></worksheet>`},
	)
}

// PDF writes a minimal valid PDF, one page per entry, each showing its text in Helvetica (uncompressed
// content streams: the text PDFium lays out is the file's bulk).
func PDF(pages []string) []byte { return pdf(pages, false, nil) }

// PDFWithInfo is PDF with an Info dictionary holding info's entries (keys such as Title, Author,
// CreationDate; values written as literal strings).
func PDFWithInfo(pages []string, info map[string]string) []byte { return pdf(pages, false, info) }

// FlatePDF is PDF with every content stream compressed (/FlateDecode), as producers write them: the
// file is several times smaller than the text PDFium inflates and lays out.
func FlatePDF(pages []string) []byte { return pdf(pages, true, nil) }

// FlatePDFOfSize is a compressed PDF of about size bytes, text pages like BigFile's.
func FlatePDFOfSize(size int) []byte {
	var pages []string
	for n := 0; n < size; n += 1400 { // a page's 5 KB of text compresses to about 1.4 KB
		pages = append(pages, pageText(len(pages)))
	}
	return FlatePDF(pages)
}

func pageText(n int) string {
	var p strings.Builder
	for j := range 45 {
		fmt.Fprintf(&p, "Clause %d.%d: the customer may return goods within 30 days of delivery. ", n, j)
	}
	return p.String()
}

func pdf(pages []string, flate bool, info map[string]string) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(body string) int {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
		return len(offsets)
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	offsets = append(offsets, 0) // the page tree (object 2), written last
	font := obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	var kids []string
	esc := strings.NewReplacer("(", "\\(", ")", "\\)", "\\", "\\\\")
	for _, text := range pages {
		content := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", esc.Replace(text))
		filter := ""
		if flate {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			zw.Write([]byte(content))
			zw.Close()
			content, filter = z.String(), " /Filter /FlateDecode"
		}
		c := obj(fmt.Sprintf("<< /Length %d%s >>\nstream\n%s\nendstream", len(content), filter, content))
		p := obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R >>", font, c))
		kids = append(kids, fmt.Sprintf("%d 0 R", p))
	}
	infoRef := ""
	if len(info) > 0 {
		keys := make([]string, 0, len(info))
		for k := range info {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var d strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&d, "/%s (%s) ", k, esc.Replace(info[k]))
		}
		infoRef = fmt.Sprintf(" /Info %d 0 R", obj("<< "+d.String()+">>"))
	}
	offsets[1] = b.Len()
	fmt.Fprintf(&b, "2 0 obj\n<< /Type /Pages /Kids [%s] /Count %d >>\nendobj\n", strings.Join(kids, " "), len(pages))
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, infoRef, xref)
	return b.Bytes()
}

// ImagePDF is a PDF of pages with a line of text and a JPEG-filtered image of imageBytes (random
// bytes: extracting text never decodes an image), as in scanned or photo-heavy documents.
func ImagePDF(pages, imageBytes int) []byte {
	var b bytes.Buffer
	var offsets []int
	obj := func(dict string, stream []byte) int {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\n", len(offsets), dict)
		if stream != nil {
			b.WriteString("stream\n")
			b.Write(stream)
			b.WriteString("\nendstream\n")
		}
		b.WriteString("endobj\n")
		return len(offsets)
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>", nil)
	offsets = append(offsets, 0) // the page tree (object 2), written last
	font := obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", nil)
	img := make([]byte, imageBytes)
	var kids []string
	for i := range pages {
		for j := range img {
			img[j] = byte(i*131 + j*7 + j>>8)
		}
		im := obj(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width 1000 /Height 1000 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>", len(img)), img)
		content := fmt.Sprintf("q 400 0 0 400 100 300 cm /Im1 Do Q BT /F1 12 Tf 72 720 Td (Photo page %d: the product from the front.) Tj ET", i+1)
		c := obj(fmt.Sprintf("<< /Length %d >>", len(content)), []byte(content))
		p := obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> /XObject << /Im1 %d 0 R >> >> /Contents %d 0 R >>", font, im, c), nil)
		kids = append(kids, fmt.Sprintf("%d 0 R", p))
	}
	offsets[1] = b.Len()
	fmt.Fprintf(&b, "2 0 obj\n<< /Type /Pages /Kids [%s] /Count %d >>\nendobj\n", strings.Join(kids, " "), pages)
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}
