package reader

import "testing"

// Overview questions ask about a topic as a whole; questions for a fact, in either language, do not.
func TestOverviewQuestion(t *testing.T) {
	for q, want := range map[string]bool{
		"tell me about annual leave":                           true,
		"Tell me more about the refund policy.":                true,
		"What about annual leave?":                             true,
		"Give me an overview of the price list":                true,
		"Describe the leave policy":                            true,
		"annual leave":                                         true,
		"expense policy travel":                                true,
		"介绍一下年假":                                               true,
		"说说报销流程":                                               true,
		"关于年假":                                                 true,
		"年假政策":                                                 true,
		"年假的相关规定":                                              true,
		"How many days of annual leave do I get?":              false,
		"What is the monthly price of the Team plan?":          false,
		"Who approves annual leave?":                           false,
		"Is parental leave paid?":                              false,
		"年假每年多少天？":                                             false,
		"犹豫期是多少天？":                                             false,
		"Which NFL team represented the AFC at Super Bowl 50?": false,
		"The annual leave policy was changed in which year by the board of directors": false,
	} {
		if got := OverviewQuestion(q); got != want {
			t.Errorf("OverviewQuestion(%q) = %v, want %v", q, got, want)
		}
	}
}
