package extract

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/rag"
)

// The texts the encoding fixtures hold, in the language each encoding is used for. Each carries a
// phrase (the query) that must be found in the keyword index after decoding.
var (
	zhHans = "年假制度\n\n员工入职满一年后，每年享有十天带薪年假。年假应当提前两周向直属主管申请，并在人事系统中登记。" +
		"未休完的年假可以顺延到下一年的第一季度，逾期作废。试用期内的员工不享受年假，但可以申请事假。\n\n" +
		"报销流程\n\n差旅费用需要在出差结束后三十天内提交报销申请，并附上发票和行程单。"
	zhHant = "年假制度\n\n員工入職滿一年後，每年享有十天帶薪年假。年假應當提前兩週向直屬主管申請，並在人事系統中登記。" +
		"未休完的年假可以順延到下一年的第一季度，逾期作廢。試用期內的員工不享受年假，但可以申請事假。\n\n" +
		"報銷流程\n\n差旅費用需要在出差結束後三十天內提交報銷申請，並附上發票和行程單。"
	ja = "有給休暇について\n\n入社から一年が経過した社員は、毎年十日間の有給休暇を取得できます。" +
		"休暇を取る場合は、二週間前までに上司に申請してください。使わなかった休暇は翌年に繰り越すことができます。\n\n" +
		"経費の精算は、出張が終わってから三十日以内に領収書を添えて提出してください。"
	ko = "연차 휴가 제도\n\n입사 후 일 년이 지난 직원은 매년 열흘의 유급 휴가를 받을 수 있습니다. " +
		"휴가를 사용하려면 이 주 전에 담당 관리자에게 신청해야 합니다. 사용하지 않은 휴가는 다음 해로 이월할 수 있습니다.\n\n" +
		"출장 경비는 출장이 끝난 후 삼십 일 이내에 영수증과 함께 제출해야 합니다."
	latin = "Congés payés\n\nAprès un an d'ancienneté, chaque employé bénéficie de dix jours de congés payés par année. " +
		"La demande doit être déposée deux semaines à l'avance auprès du responsable hiérarchique. " +
		"Les jours non utilisés sont reportés au premier trimestre de l'année suivante. Größere Reisekosten werden erstattet."
)

// encodingFixture is one committed file in testdata/encodings: text in an encoding, and what decoding
// it must give.
type encodingFixture struct {
	file  string
	text  string
	enc   encoding.Encoding
	bom   []byte
	want  string // the Enc constant the detector must report
	query string // a term of the text the keyword index must find
}

func encodingFixtures() []encodingFixture {
	le := unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	be := unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	var fx []encodingFixture
	for _, f := range []struct {
		name, text string
		enc        encoding.Encoding
		bom        []byte
		want       string
		query      string
	}{
		{"gb18030", zhHans, simplifiedchinese.GB18030, nil, EncGB18030, "带薪年假"},
		{"gbk", zhHans, simplifiedchinese.GBK, nil, EncGB18030, "报销申请"},
		{"big5", zhHant, traditionalchinese.Big5, nil, EncBig5, "帶薪年假"},
		{"shift_jis", ja, japanese.ShiftJIS, nil, EncShiftJIS, "有給休暇"},
		{"euc-kr", ko, korean.EUCKR, nil, EncEUCKR, "휴가"},
		{"utf-16le-bom", zhHans, le, []byte{0xff, 0xfe}, EncUTF16LE, "带薪年假"},
		{"utf-16be-bom", zhHans, be, []byte{0xfe, 0xff}, EncUTF16BE, "带薪年假"},
		{"utf-16le", zhHans, le, nil, EncUTF16LE, "带薪年假"},
		{"utf-16be", zhHans, be, nil, EncUTF16BE, "带薪年假"},
		{"latin-1", latin, charmap.ISO8859_1, nil, EncLatin1, "congés"},
	} {
		for _, ext := range []string{".txt", ".md", ".csv", ".html"} {
			text := f.text
			switch ext {
			case ".md":
				text = "# " + text
			case ".csv":
				text = csvOf(text)
			case ".html":
				text = htmlOf(text, "")
			}
			fx = append(fx, encodingFixture{file: f.name + ext, text: text, enc: f.enc, bom: f.bom, want: f.want, query: f.query})
		}
	}
	// A page that declares its encoding: the declaration decides, the detector is not asked.
	fx = append(fx, encodingFixture{file: "meta-gb2312.html", text: htmlOf(zhHans, `<meta http-equiv="Content-Type" content="text/html; charset=gb2312">`),
		enc: simplifiedchinese.GBK, want: EncGB18030, query: "带薪年假"})
	fx = append(fx, encodingFixture{file: "meta-big5.html", text: htmlOf(zhHant, `<meta charset="big5">`),
		enc: traditionalchinese.Big5, want: EncBig5, query: "帶薪年假"})
	return fx
}

func csvOf(text string) string {
	var b strings.Builder
	b.WriteString("section,text\n")
	for i, p := range strings.Split(text, "\n\n") {
		b.WriteString(string(rune('A'+i)) + ",\"" + strings.ReplaceAll(p, "\"", "\"\"") + "\"\n")
	}
	return b.String()
}

func htmlOf(text, meta string) string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head>" + meta + "<title>doc</title></head><body>\n")
	for _, p := range strings.Split(text, "\n\n") {
		b.WriteString("<p>" + p + "</p>\n")
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// encodeFixture renders a fixture's bytes; the committed file must equal it.
func encodeFixture(t *testing.T, f encodingFixture) []byte {
	t.Helper()
	b, err := f.enc.NewEncoder().Bytes([]byte(f.text))
	if err != nil {
		t.Fatalf("%s: encode: %v", f.file, err)
	}
	return append(append([]byte{}, f.bom...), b...)
}

// The fixtures in testdata/encodings are generated here (go test -run TestEncodingFixtures -update)
// and committed; the test fails when a committed file and its generator disagree.
func TestEncodingFixtures(t *testing.T) {
	dir := filepath.Join("testdata", "encodings")
	for _, f := range encodingFixtures() {
		want := encodeFixture(t, f)
		path := filepath.Join(dir, f.file)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test -run TestEncodingFixtures -update creates it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from its generator", path)
		}
	}
}

// Every fixture decodes to exactly its text, names its encoding, and after chunking is found in the
// keyword index by a term of the text: the index holds the words, not mojibake.
func TestEncodingsDecodedAndIndexed(t *testing.T) {
	for _, f := range encodingFixtures() {
		t.Run(f.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "encodings", f.file))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Extract(context.Background(), f.file, data, Limits{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if res.Encoding != f.want {
				t.Errorf("encoding = %q, want %q", res.Encoding, f.want)
			}
			if strings.Contains(res.Markdown, "\uFFFD") {
				t.Errorf("markdown holds U+FFFD:\n%s", res.Markdown)
			}
			for _, sentence := range []string{"年假", "休暇", "휴가", "Congés"} {
				if strings.Contains(f.text, sentence) && !strings.Contains(res.Markdown, sentence) {
					t.Errorf("markdown lacks %q:\n%s", sentence, res.Markdown)
				}
			}
			split := chunk.Split(res.Markdown, chunk.DefaultOptions())
			ix := bm25.New(bm25.DefaultParams())
			for i, c := range split.Children {
				ix.Add(bm25.Doc{ID: f.file + string(rune('a'+i)), Tenant: "t", KBID: "kb", DocumentID: "d", Content: c.Text})
			}
			hits, err := ix.Search(context.Background(), f.query, 3, rag.Filter{Tenant: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) == 0 {
				t.Fatalf("query %q found nothing in %d chunks:\n%s", f.query, len(split.Children), res.Markdown)
			}
		})
	}
}

// The body text survives exactly: every paragraph of the source text is in the markdown.
func TestEncodingsExactText(t *testing.T) {
	for _, f := range encodingFixtures() {
		if !strings.HasSuffix(f.file, ".txt") {
			continue
		}
		data := encodeFixture(t, f)
		s, enc, err := decodeText(data)
		if err != nil {
			t.Fatalf("%s: %v", f.file, err)
		}
		if s != f.text || enc != f.want {
			t.Errorf("%s: decoded (%s) %q, want (%s) %q", f.file, enc, s, f.want, f.text)
		}
	}
}

// Bytes that are no text in any supported encoding fail with a message naming what to do.
func TestUndecodableText(t *testing.T) {
	gbk, _ := simplifiedchinese.GBK.NewEncoder().Bytes([]byte(zhHans))
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"binary", []byte("PK\x03\x04\x00\x00\x01\x02binary\x00\x00data"), "binary"},
		{"bad utf-16 bom", []byte{0xff, 0xfe, 0x00, 0xd8, 'a', 0}, "not valid UTF-16LE"},
		{"bad utf-8 bom", append([]byte("\xef\xbb\xbfok "), gbk...), "not valid UTF-8"},
		{"utf-32", []byte{0xff, 0xfe, 0, 0, 'a', 0, 0, 0}, "UTF-32"},
		{"control bytes", bytes.Repeat([]byte{0x81, 0x01, 0xfe, 0x02, 0x9f, 0x03}, 50), "save it as UTF-8"},
	} {
		_, _, err := decodeText(c.data)
		if err == nil || rag.KindOf(err) != rag.KindTerminal || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want a Terminal error containing %q", c.name, err, c.want)
		}
	}
}

// A page saved as UTF-8 whose meta tag still says gb2312 is read as UTF-8: the bytes decide.
func TestUTF8BeatsStaleMeta(t *testing.T) {
	page := htmlOf(zhHans, `<meta charset="gb2312">`)
	s, enc, err := decodeHTML([]byte(page))
	if err != nil || enc != EncUTF8 || s != page {
		t.Fatalf("decodeHTML = %q, %v; want the page as utf-8", enc, err)
	}
}

// Short lines are where statistical detectors guess wrong (ICU's read "你好，世界" in GBK as Big5):
// each must come back exactly, in the right encoding.
func TestShortTextDetected(t *testing.T) {
	for _, c := range []struct {
		text string
		enc  encoding.Encoding
		want string
	}{
		{"你好，世界", simplifiedchinese.GBK, EncGB18030},
		{"员工手册 第一章 总则", simplifiedchinese.GBK, EncGB18030},
		{"公司的年假政策如下：", simplifiedchinese.GB18030, EncGB18030},
		{"員工手冊 第一章 總則", traditionalchinese.Big5, EncBig5},
		{"公司的年假政策如下：", traditionalchinese.Big5, EncBig5},
		{"こんにちは世界", japanese.ShiftJIS, EncShiftJIS},
		{"社員就業規則", japanese.ShiftJIS, EncShiftJIS},
		{"안녕하세요 세계", korean.EUCKR, EncEUCKR},
		{"café", charmap.ISO8859_1, EncLatin1},
		{"naïve résumé, déjà vu", charmap.ISO8859_1, EncLatin1},
		{"Straße – “quoted”", charmap.Windows1252, EncWin1252},
	} {
		b, err := c.enc.NewEncoder().Bytes([]byte(c.text))
		if err != nil {
			t.Fatal(err)
		}
		s, enc, err := decodeText(b)
		if err != nil || s != c.text || enc != c.want {
			t.Errorf("decodeText(%s of %q) = %q, %q, %v; want %q", c.want, c.text, s, enc, err, c.want)
		}
	}
}
