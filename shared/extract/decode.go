package extract

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	xunicode "golang.org/x/text/encoding/unicode"
)

// Encoding names stored on a document (rag.Document.Encoding): lower-case WHATWG/IANA labels of the
// decoder actually used.
const (
	EncUTF8      = "utf-8"
	EncUTF16LE   = "utf-16le"
	EncUTF16BE   = "utf-16be"
	EncGB18030   = "gb18030"
	EncBig5      = "big5"
	EncShiftJIS  = "shift_jis"
	EncEUCKR     = "euc-kr"
	EncEUCJP     = "euc-jp"
	EncLatin1    = "iso-8859-1"
	EncWin1252   = "windows-1252"
	triedLegacy  = "UTF-8, UTF-16, GB18030/GBK, Big5, Shift-JIS, EUC-KR, Latin-1"
	detectSample = 64 << 10 // bytes the statistical detector reads: enough for its frequency tables
)

// legacy maps a label (a chardet result or an HTML <meta charset>) to the decoder docmind reads it
// with. The GB family is always read as GB18030: GB2312 and GBK are its subsets, and a GBK file with one
// four-byte GB18030 character must not fail. ISO-8859-1 is read as windows-1252 (as browsers do): the
// bytes 0x80-0x9F are C1 controls in Latin-1 but curly quotes and the euro sign in every real file.
func legacy(label string) (encoding.Encoding, string) {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "gb18030", "gbk", "gb2312", "gb_2312-80", "x-gbk", "cp936", "csgb2312", "chinese", "iso-ir-58", "euc-cn":
		return simplifiedchinese.GB18030, EncGB18030
	case "big5", "big5-hkscs", "cn-big5", "csbig5", "x-x-big5":
		return traditionalchinese.Big5, EncBig5
	case "shift_jis", "shift-jis", "sjis", "ms_kanji", "csshiftjis", "windows-31j", "x-sjis", "ms932", "cp932":
		return japanese.ShiftJIS, EncShiftJIS
	case "euc-jp", "cseucpkdfmtjapanese", "x-euc-jp":
		return japanese.EUCJP, EncEUCJP
	case "euc-kr", "cseuckr", "ks_c_5601-1987", "ks_c_5601-1989", "ksc5601", "ksc_5601", "korean", "windows-949", "cp949", "iso-ir-149":
		return korean.EUCKR, EncEUCKR
	case "iso-8859-1", "latin1", "l1", "iso8859-1", "iso_8859-1", "cp819", "ibm819", "us-ascii", "ascii":
		return charmap.Windows1252, EncLatin1
	case "windows-1252", "cp1252", "x-cp1252":
		return charmap.Windows1252, EncWin1252
	case "utf-16le", "utf-16":
		return xunicode.UTF16(xunicode.LittleEndian, xunicode.IgnoreBOM), EncUTF16LE
	case "utf-16be":
		return xunicode.UTF16(xunicode.BigEndian, xunicode.IgnoreBOM), EncUTF16BE
	}
	return nil, ""
}

// decodeText reads a text file (plain text, markdown, CSV) of unknown encoding as UTF-8 and names the
// encoding it was in. The order is: a byte-order mark; valid UTF-8; UTF-16 without a mark (recognised
// by its zero bytes); then detectLegacy over the legacy CJK and Latin encodings. A candidate is taken
// only if every byte decodes and the text reads clearly as its language, so a file is either read
// exactly or refused with a Terminal error: garbled text never reaches the index.
func decodeText(data []byte) (string, string, error) { return decode(data, false) }

// decodeHTML is decodeText for a web page, which may also declare its encoding in <meta charset> (or
// http-equiv Content-Type); the declaration is honoured after the byte-order mark.
func decodeHTML(data []byte) (string, string, error) { return decode(data, true) }

func decode(data []byte, isHTML bool) (string, string, error) {
	if s, enc, ok, err := decodeBOM(data); ok || err != nil {
		return s, enc, err
	}
	// Valid UTF-8 wins even over a <meta charset> that says otherwise: editors re-save pages as UTF-8
	// without touching the meta tag, and legacy CJK text long enough to matter is never valid UTF-8.
	if utf8.Valid(data) && bytes.IndexByte(data, 0) < 0 {
		return string(data), EncUTF8, nil
	}
	if enc := sniffUTF16(data); enc != "" {
		e, _ := legacy(enc)
		s, bad := strictDecode(e, data)
		if bad >= 0 {
			return "", "", Terminal("the file looks like %s text without a byte-order mark, but it is not valid there (byte %d); save it as UTF-8", strings.ToUpper(enc), bad)
		}
		return s, enc, nil
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", "", Terminal("this looks like a binary file, not text")
	}
	if isHTML {
		if s, enc, ok := decodeDeclared(data); ok {
			return s, enc, nil
		}
	}
	return detectLegacy(data, isHTML)
}

// decodeBOM reads a file that starts with a byte-order mark; ok is false when there is none.
func decodeBOM(data []byte) (s, enc string, ok bool, err error) {
	switch {
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		data = data[3:]
		if !utf8.Valid(data) {
			return "", "", true, Terminal("the file starts with a UTF-8 byte-order mark but is not valid UTF-8 (byte %d)", invalidUTF8At(data)+3)
		}
		if bytes.IndexByte(data, 0) >= 0 {
			return "", "", true, Terminal("this looks like a binary file, not text")
		}
		return string(data), EncUTF8, true, nil
	case bytes.HasPrefix(data, []byte{0xff, 0xfe, 0, 0}) || bytes.HasPrefix(data, []byte{0, 0, 0xfe, 0xff}):
		return "", "", true, Terminal("UTF-32 text is not supported; save the file as UTF-8")
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}), bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		enc := EncUTF16LE
		if data[0] == 0xfe {
			enc = EncUTF16BE
		}
		e, _ := legacy(enc)
		s, bad := strictDecode(e, data[2:])
		if bad >= 0 {
			return "", "", true, Terminal("the file starts with a %s byte-order mark but is not valid %s (byte %d); save it as UTF-8", strings.ToUpper(enc), strings.ToUpper(enc), bad+2)
		}
		if strings.IndexByte(s, 0) >= 0 {
			return "", "", true, Terminal("this looks like a binary file, not text")
		}
		return s, enc, true, nil
	}
	return "", "", false, nil
}

// sniffUTF16 recognises UTF-16 without a byte-order mark in a sample that has zero bytes (which
// UTF-8 and the legacy encodings never contain in text). Both byte orders are decoded; the right one
// reads as text (nearly every character in the ranges writing uses), the swapped one mostly does not.
// When both do (ASCII swapped lands in the CJK block), the zeros decide: ASCII puts them in the high
// byte of a code unit, at odd offsets in little-endian files and even offsets in big-endian ones.
// It returns "" when neither order reads as text (a binary file).
func sniffUTF16(data []byte) string {
	n := min(len(data), detectSample) &^ 1
	if n < 4 || bytes.IndexByte(data[:n], 0) < 0 {
		return ""
	}
	var even, odd int
	for i := 0; i < n; i += 2 {
		if data[i] == 0 {
			even++
		}
		if data[i+1] == 0 {
			odd++
		}
	}
	le, be := utf16Text(data[:n], EncUTF16LE), utf16Text(data[:n], EncUTF16BE)
	switch {
	case le >= 0.95 && (be < 0.95 || odd >= even):
		return EncUTF16LE
	case be >= 0.95:
		return EncUTF16BE
	}
	return ""
}

// utf16Text decodes sample in one byte order and returns the share of characters in the ranges text
// is written in; a sample with an invalid surrogate scores 0 (one cut at the end is allowed).
func utf16Text(sample []byte, enc string) float64 {
	e, _ := legacy(enc)
	s, bad := strictDecode(e, sample)
	if bad >= 0 && bad < len(sample)-2 {
		return 0
	}
	if bad >= 0 {
		s, _ = strictDecode(e, sample[:len(sample)-2])
	}
	var good, all int
	for _, r := range s {
		all++
		if textRune(r) {
			good++
		}
	}
	if all == 0 {
		return 0
	}
	return float64(good) / float64(all)
}

// textRune reports characters of the ranges documents are written in: printable ASCII and white
// space, Latin, Greek, Cyrillic, general punctuation, CJK punctuation, kana, CJK ideographs, Hangul and
// full-width forms.
func textRune(r rune) bool {
	switch {
	case r == '\n' || r == '\r' || r == '\t' || (r >= 0x20 && r < 0x7f):
		return true
	case r >= 0xa0 && r < 0x530, r >= 0x2000 && r < 0x2070, r >= 0x2100 && r < 0x2200,
		r >= 0x3000 && r < 0x3100, r >= 0x3400 && r < 0x4dc0, r >= 0x4e00 && r < 0xa000,
		r >= 0xac00 && r < 0xd7a4, r >= 0xff00 && r < 0xfff0:
		return true
	}
	return false
}

// decodeDeclared reads a page by its <meta charset> when that names an encoding docmind knows and the
// bytes are valid in it; a declaration that the bytes contradict is ignored (the detector decides).
func decodeDeclared(data []byte) (string, string, bool) {
	_, name, certain := charset.DetermineEncoding(data, "")
	if !certain || name == "" {
		return "", "", false
	}
	e, enc := legacy(name)
	if e == nil || enc == EncUTF16LE || enc == EncUTF16BE { // a meta tag readable as ASCII cannot be UTF-16
		return "", "", false
	}
	s, bad := strictDecode(e, data)
	if bad >= 0 {
		return "", "", false
	}
	return s, enc, true
}

// detectLegacy decodes the sample in every supported legacy encoding, drops those in which some byte
// is invalid, and scores the rest by how much the result reads like text in the language the
// encoding is used for (see langScore). The best is taken only if it is clearly text and clearly ahead
// of the runner-up: a wrong guess would put mojibake in the index, so a close call is refused with a
// Terminal error that says to save the file as UTF-8. The statistical detectors we tried first
// (ICU's, via chardet) read five-character GBK lines as Big5 and short Big5 lines as Shift-JIS.
func detectLegacy(data []byte, isHTML bool) (string, string, error) {
	sample := data[:min(len(data), detectSample)]
	if isHTML {
		sample = stripTags(sample)
	}
	type cand struct {
		enc   string
		score float64
	}
	var best, second cand
	for _, label := range []string{EncGB18030, EncBig5, EncShiftJIS, EncEUCKR, EncWin1252} {
		e, enc := legacy(label)
		s, bad := strictDecode(e, sample)
		if bad >= 0 && (len(sample) == len(data) || bad < len(sample)-4) { // a cut sample may end mid-character
			continue
		}
		if hasControls(s) {
			continue
		}
		c := cand{enc, langScore(enc, s)}
		if c.score > best.score {
			best, second = c, best
		} else if c.score > second.score {
			second = c
		}
	}
	if best.enc == "" || best.score < 0.3 || (best.score < 0.6 && best.score-second.score < 0.15) {
		return "", "", Terminal("the file is not UTF-8 and its text encoding was not recognised (tried %s); save it as UTF-8", triedLegacy)
	}
	e, enc := legacy(best.enc)
	s, bad := strictDecode(e, data)
	if bad >= 0 {
		return "", "", Terminal("the file reads as %s text but byte %d is not valid there; save it as UTF-8", strings.ToUpper(enc), bad)
	}
	if enc == EncWin1252 && !hasC1(data) {
		enc = EncLatin1
	}
	return s, enc, nil
}

// stripTags drops markup from a page sample, so attribute values and tag names (ASCII) do not dilute
// the text the score reads; it does not need to be a parser, only to keep the text between tags.
func stripTags(b []byte) []byte {
	out := make([]byte, 0, len(b))
	in := false
	for _, c := range b {
		switch {
		case c == '<':
			in = true
		case c == '>':
			in = false
		case !in:
			out = append(out, c)
		}
	}
	return out
}

// langScore is the mean, over the non-ASCII characters of s, of how typical each is of text in the
// language enc serves: common CJK ideographs and CJK punctuation for the Chinese encodings, kana for
// Shift-JIS, common Hangul syllables for EUC-KR, accented letters next to ASCII for Latin-1. A wrong
// decoding yields rare ideographs, half-width katakana, stray symbols or runs of accented letters.
func langScore(enc, s string) float64 {
	var sum float64
	var n int
	prevASCII := true
	rs := []rune(s)
	for i, r := range rs {
		if r < 0x80 {
			prevASCII = true
			continue
		}
		n++
		nextASCII := i+1 == len(rs) || rs[i+1] < 0x80
		sum += runeWeight(enc, r, prevASCII && nextASCII)
		prevASCII = false
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func runeWeight(enc string, r rune, isolated bool) float64 {
	cjkPunct := (r >= 0x3000 && r < 0x3040) || (r >= 0xff01 && r < 0xff5f) || r == 0x2014 || r == 0x2026 ||
		(r >= 0x2018 && r < 0x2020) || r == 0x00b7
	han := r >= 0x4e00 && r < 0xa000
	kana := r >= 0x3040 && r < 0x3100
	hangul := r >= 0xac00 && r < 0xd7a4
	switch enc {
	case EncGB18030, EncBig5:
		switch {
		case han && commonHan[r]:
			return 1
		case han:
			return 0.3
		case cjkPunct:
			return 1
		}
	case EncShiftJIS:
		switch {
		case kana, han && commonHan[r], cjkPunct:
			return 1
		case han:
			return 0.4
		case r >= 0xff61 && r < 0xffa0: // half-width katakana: legacy, and what Chinese bytes decode to
			return 0.05
		}
	case EncEUCKR:
		switch {
		case hangul && commonHangul[r]:
			return 1
		case hangul:
			return 0.2
		case han && commonHan[r]:
			return 0.5
		case cjkPunct:
			return 1
		}
	case EncWin1252:
		switch {
		case r >= 0xc0 && r <= 0xff && r != 0xd7 && r != 0xf7:
			if isolated {
				return 1
			}
			return 0.3
		case r == 0x20ac || (r >= 0x2013 && r <= 0x2026) || r == 0xab || r == 0xbb || r == 0xb0 || r == 0xa9 || r == 0xb7:
			if isolated {
				return 1
			}
			return 0.3
		}
		return 0.05
	}
	return 0
}

// commonHan holds about a thousand of the most frequent Chinese characters in simplified and in
// traditional form (together they cover most running text); commonHangul the most frequent Hangul
// syllables. A correct decoding is mostly made of them; a wrong one only by chance.
var commonHan = runeSet("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坐集编宝谈府拉黑且随格尽剑讲布杀微怕母调局根曾准团段终乐切级克精哪官示冷域县假期申请休息制度规定工作员工公司部门经理主管人事财务报销费用发票审批流程系统登记提交手续合同薪资奖金福利培训考核绩效职位入职离职试用期满年季月日周天小时分钟医疗保险社保公积金加班补贴出差住宿交通餐饮安全管理办法条例章则附件说明注意事项要求标准范围适用以上以下不超过每次累计逾期作废顺延享有带薪病婚产丧事年假调休审核批准签字盖章" +
	"這來國個說們為會著過學對裡後麼沒於還發當無開見經頭動兩長樣現將與點實種聲話兒機給幾業間電門東聽氣關並內軍產萬體別處總場師書員報馬張難數車應親記邊風戰許覺統請愛讓認論義術結連遠資隊帶條變聯權領傳紅決達辦運強轉眾輕語滿寫識極黃錢黨設雙歷網專誰讀飛觀爭組視濟離雖編寶談隨盡劍講殺調準團終樂級縣員職離試滿週醫療險積補貼宿餐飲說規則附適計準審批簽請總務銷費發票經續紀錄間時鐘繳額單據資薪獎勵福訓練績擔負責護險")

var commonHangul = runeSet("이다는의에하고을가지를한서로기수리사도자대인들어게시아해정보으일상그원것나주부전거없라면만요니있었적여까화장제학문소성공관우동개경과구내발생말되국위때등신분와중습입년후간할연용받휴직청출영데며된각세히안녕드계무음심실물날운터반월크트스미회결통방식선예런려든린레저업약속금께및합함점총현재매모본바비차처초최추치타토파표프필행활희담당신청사용이월다음함께제출야영수증경비삼십내열흘유급입사후유")

func runeSet(s string) map[rune]bool {
	m := make(map[rune]bool, len(s)/3)
	for _, r := range s {
		m[r] = true
	}
	return m
}

// strictDecode decodes data with e and returns the byte offset of the first sequence that is not valid
// in e, or -1. x/text decoders replace invalid input with U+FFFD instead of failing, so the check is a
// second walk: a U+FFFD in the output that the input did not spell out is a decoding error.
func strictDecode(e encoding.Encoding, data []byte) (string, int) {
	out, err := e.NewDecoder().Bytes(data)
	if err != nil {
		return "", 0
	}
	if !bytes.Contains(out, []byte("\uFFFD")) {
		return string(out), -1
	}
	return "", firstBadOffset(e, data)
}

// firstBadOffset finds the input offset of the first undecodable sequence by bisection on prefixes
// (a prefix cut inside a valid multi-byte sequence also yields U+FFFD, so the bound is approximate to
// the width of one character, which is all an error message needs).
func firstBadOffset(e encoding.Encoding, data []byte) int {
	lo, hi := 0, len(data)
	for lo < hi {
		mid := (lo + hi) / 2
		out, _ := e.NewDecoder().Bytes(data[:mid+1])
		if bytes.Contains(bytes.TrimSuffix(out, []byte("\uFFFD")), []byte("\uFFFD")) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// hasC1 reports bytes 0x80-0x9F: in a Latin file they are windows-1252 punctuation, not ISO-8859-1.
func hasC1(data []byte) bool {
	for _, b := range data {
		if b >= 0x80 && b < 0xa0 {
			return true
		}
	}
	return false
}

// hasControls reports decoded control characters other than tab, line ends and form feed: text in the
// right encoding has none, a wrong single-byte guess over binary data has many.
func hasControls(s string) bool {
	for _, r := range s {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f') || (r >= 0x7f && r < 0xa0) {
			return true
		}
	}
	return false
}

func invalidUTF8At(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
