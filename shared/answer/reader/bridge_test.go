package reader

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rank"
)

// Issue #13 review, finding 6: the bridge to a second hop follows names, and a currency code is not
// one: "Who acquired GitHub?" quoted the handbook's home-office allowance because both lines say USD.
func TestBridgeSkipsCurrencyAndUnrelatedLines(t *testing.T) {
	evidence := []rank.Evidence{
		ev("github.md", "GitHub is a code hosting platform. Microsoft acquired GitHub in 2018 for 7.5 billion USD. The deal closed on October 26, 2018.", 1),
		ev("employee-handbook.docx", "Full-time employees receive 20 days of paid annual leave per year. Each employee may claim up to 500 USD per year for home-office equipment.", 0.5),
		ev("storage.md", "Each workspace stores up to 50 GB of files. Uploads above 2 GB are rejected.", 0.4),
	}
	for _, q := range []string{"Who acquired GitHub?", "How much did Microsoft pay for GitHub?"} {
		got := Extractive{}.Compose(q, evidence)
		if !strings.Contains(got, "Microsoft acquired GitHub") {
			t.Errorf("%s: the answer is gone:\n%s", q, got)
		}
		for _, bad := range []string{"home-office", "annual leave", "GB"} {
			if strings.Contains(got, bad) {
				t.Errorf("%s: an unrelated line (%s) quoted:\n%s", q, bad, got)
			}
		}
	}
	for _, w := range []string{"USD", "EUR", "GB", "KB", "MB", "KG", "RMB"} {
		if !lang.UnitOrCurrency(w) {
			t.Errorf("%s is read as a name", w)
		}
	}
	for _, w := range []string{"$", "¥", "€", "元", "人民币", "美元"} {
		if !lang.UnitOrCurrency(w) {
			t.Errorf("%s is read as a name", w)
		}
	}
	// a word naming a currency inside it is still a name: the bridge follows "Yuan" and a title with 元
	for _, w := range []string{"Microsoft", "GitHub", "Newport", "Usda", "Yuan", "Euro", "Dollar", "Euros", "《元史》", "《人民币的故事》"} {
		if lang.UnitOrCurrency(w) {
			t.Errorf("%s is not read as a name", w)
		}
	}
}

// A bridge still reaches the second hop when its line says what was asked: the line of another source
// that names the first hop's new name and holds the asked-for value.
func TestBridgeSecondHop(t *testing.T) {
	evidence := []rank.Evidence{
		ev("a.md", "Kiss and Tell is a 1945 comedy film starring Shirley Temple as Corliss Archer.", 1),
		ev("b.md", "Shirley Temple Black was an American actress and diplomat. She served as Chief of Protocol of the United States.", 0.6),
	}
	got := Extractive{}.Compose("What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?", evidence)
	if !strings.Contains(got, "Shirley Temple Black") {
		t.Errorf("the second hop is gone:\n%s", got)
	}
}
