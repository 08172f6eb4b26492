package lang

import (
	"math"
	"testing"
)

// A question's numeric condition, in English and Chinese, with its unit.
func TestConditionOf(t *testing.T) {
	inf := math.Inf(1)
	for q, want := range map[string]Condition{
		"What refund applies when availability is below 95%?":     {Interval{Lo: -inf, Hi: 95, HiOpen: true, Unit: "%"}, true},
		"月可用性低于95%时返还多少服务费？":                                      {Interval{Lo: -inf, Hi: 95, HiOpen: true, Unit: "%"}, true},
		"Who approves leave of more than 30 days?":                {Interval{Lo: 30, Hi: inf, LoOpen: true, Unit: "day"}, true},
		"请假超过30天需要谁批准？":                                           {Interval{Lo: 30, Hi: inf, LoOpen: true, Unit: "day"}, true},
		"What do employees with at least 3 years of service get?": {Interval{Lo: 3, Hi: inf, Unit: "year"}, true},
		"工龄不少于3年的员工有多少天年假？":                                       {Interval{Lo: 3, Hi: inf, Unit: "year"}, true},
		"工龄不满3年的员工呢？":                                             {Interval{Lo: -inf, Hi: 3, HiOpen: true, Unit: "year"}, true},
		"What is refunded for an availability of 93%?":            {Interval{Lo: 93, Hi: 93, Unit: "%"}, false},
		"Which plan costs no more than $50?":                      {Interval{Lo: -inf, Hi: 50, Unit: "usd"}, true},
		"Expenses of 500 yuan or more need what?":                 {Interval{Lo: 500, Hi: inf, Unit: "cny"}, true},
		"报销金额不超过500元需要什么？":                                        {Interval{Lo: -inf, Hi: 500, Unit: "cny"}, true},
		"What applies between 95% and 99%?":                       {Interval{Lo: 95, Hi: 99, Unit: "%"}, true},
		"Tickets open for under 4 hours?":                         {Interval{Lo: -inf, Hi: 4, HiOpen: true, Unit: "hour"}, true},
	} {
		got, ok := ConditionOf(q)
		if !ok || got != want {
			t.Errorf("ConditionOf(%q) = %+v %v, want %+v", q, got, ok, want)
		}
	}
	// numbers without a unit are names and dates, not conditions; a year is not a duration
	for _, q := range []string{"What happened in 1995?", "Who won Super Bowl 50?", "2016年发生了什么？", "How many interceptions did Manning have in 2015?",
		// an era's year and "which year" are not durations (CMRC 2018)
		"天正16年松平康忠的主要工作是什么？", "民国二年南田县发生了什么变故？", "李日华生于哪一年？"} {
		if c, ok := ConditionOf(q); ok {
			t.Errorf("ConditionOf(%q) = %+v; want none", q, c)
		}
	}
}

// A line's ranges against a question's condition: the row a compared condition names matches, the
// neighbouring ranges conflict, a value lies in a range, other units are not compared.
func TestFitOf(t *testing.T) {
	below95, _ := ConditionOf("availability below 95%")
	at93, _ := ConditionOf("availability of 93%")
	at9995, _ := ConditionOf("availability of 99.95%")
	over30, _ := ConditionOf("leave of more than 30 days")
	atLeast3, _ := ConditionOf("至少3年")
	for _, c := range []struct {
		cond Condition
		line string
		want Fit
	}{
		{below95, "| < 95% | 50% |", FitMatch},
		{below95, "低于 95.0%: 50%", FitMatch},
		{below95, "95%以下 | 50%", FitMatch},
		{below95, "Availability below 95%: 50% of the monthly fee", FitMatch},
		{below95, "95%-99%: 25%", FitConflict},
		{below95, "95.0% 至 99.0%: 25%", FitConflict},
		{below95, "服务月可用性不低于 99.9%。", FitConflict},
		{below95, "Annual leave is 20 days.", FitNone},
		{at93, "< 95%", FitMatch},
		{at93, "95%以下", FitMatch},
		{at93, "95%-99%", FitConflict},
		{at93, "below 93%", FitMatch}, // its bound
		{at93, "below 90%", FitConflict},
		{at93, "If availability falls to 93%, the customer is refunded.", FitMatch},
		{at9995, "≥ 99.9%: no refund", FitMatch},
		{at9995, "99.0% 至 99.9%", FitConflict},
		{over30, "Leave of more than 30 days is approved by the director.", FitMatch},
		{over30, "30 days or more: the director", FitMatch},
		{over30, "Leave of up to 30 days is approved by the manager.", FitConflict},
		{over30, "Leave of 45 days was taken last year.", FitMatch},
		{over30, "Leave must be booked 30 weeks ahead.", FitNone},
		{atLeast3, "工龄满3年及以上：15天", FitMatch},
		{atLeast3, "工龄3年以上的员工享有15天年假", FitMatch},
		{atLeast3, "工龄1至3年：10天", FitConflict},
		{atLeast3, "2019年入职", FitNone},
		{atLeast3, "在天正16年（1588年）把家督让予嫡子康直", FitNone},
	} {
		if got := FitOf(c.cond, c.line); got != c.want {
			t.Errorf("FitOf(%+v, %q) = %v, want %v", c.cond, c.line, got, c.want)
		}
	}
}
