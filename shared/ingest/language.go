package ingest

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// detectLanguage guesses a document's main language from its first 20,000 characters (the derived
// "language" metadata): by script for Chinese, Japanese, Korean, Russian, Arabic and Greek, by the
// commonest function words for English, French, German, Spanish, Italian, Portuguese and Dutch.
// Empty when the text is too short or nothing stands out: a wrong language is worse than none.
func detectLanguage(md string) string {
	var han, kana, hangul, cyr, arabic, greek, latin int
	n := 0
	for _, r := range md {
		if n++; n > 20000 {
			break
		}
		if r < utf8.RuneSelf { // most of most documents: skip the script tables' searches
			if c := r | 0x20; c >= 'a' && c <= 'z' {
				latin++
			}
			continue
		}
		switch {
		case unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
			kana++
		case unicode.Is(unicode.Han, r):
			han++
		case unicode.Is(unicode.Hangul, r):
			hangul++
		case unicode.Is(unicode.Cyrillic, r):
			cyr++
		case unicode.Is(unicode.Arabic, r):
			arabic++
		case unicode.Is(unicode.Greek, r):
			greek++
		case unicode.Is(unicode.Latin, r):
			latin++
		}
	}
	letters := han + kana + hangul + cyr + arabic + greek + latin
	if letters < 15 { // a CJK character says more than a Latin letter: 15 of them are a sentence
		return ""
	}
	switch {
	case kana*10 > letters: // Japanese mixes kana with kanji
		return "ja"
	case han*2 > letters:
		return "zh"
	case hangul*2 > letters:
		return "ko"
	case cyr*2 > letters:
		return "ru"
	case arabic*2 > letters:
		return "ar"
	case greek*2 > letters:
		return "el"
	case latin*2 <= letters || latin < 40:
		return ""
	}
	counts := map[string]int{}
	words := 0
	// the words of the first 60,000 bytes, lower-cased, looked up as they are read (no copy of the text)
	var word []byte
	flush := func() {
		if len(word) > 0 {
			words++
			for _, lang := range functionLangs[string(word)] {
				counts[lang]++
			}
			word = word[:0]
		}
	}
	for _, r := range md[:min(len(md), 60000)] {
		if unicode.IsLetter(r) {
			word = utf8.AppendRune(word, unicode.ToLower(r))
		} else {
			flush()
		}
	}
	flush()
	best, second := "", 0
	for lang, c := range counts {
		if c > counts[best] || (c == counts[best] && lang < best) {
			best, second = lang, counts[best]
		} else if c > second {
			second = c
		}
	}
	// at least 5% of the words, and clearly ahead of the runner-up
	if best == "" || counts[best]*20 < words || counts[best] < 2*second {
		return ""
	}
	return best
}

var functionWords = map[string]map[string]bool{
	"en": words("the and of to is are for with that this be on by not or from"),
	"fr": words("le la les des est et une du pour dans que qui sur au avec pas"),
	"de": words("der die das und ist nicht mit sich den dem ein eine auf für von"),
	"es": words("el la los las del que por para con una es y se como al"),
	"it": words("il di che è per una con non sono della gli nel alla le"),
	"pt": words("o os da do que em para com uma não são dos das no na"),
	"nl": words("de het een van en is niet op dat voor met zijn te aan"),
}

// functionLangs lists, for each function word, the languages that have it (one look-up per word).
var functionLangs = func() map[string][]string {
	out := map[string][]string{}
	for lang, set := range functionWords {
		for w := range set {
			out[w] = append(out[w], lang)
		}
	}
	return out
}()

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}
