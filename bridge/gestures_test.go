package bridge

import (
	"testing"
	"time"
)

func TestGestures(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		inputs []time.Duration // offsets from t0
		takes  []time.Duration
		want   []bool
	}{
		{"no input", nil, []time.Duration{0}, []bool{false}},
		{"just after a click", []time.Duration{0}, []time.Duration{100 * time.Millisecond}, []bool{true}},
		{"at the edge of the window", []time.Duration{0}, []time.Duration{GestureWindow}, []bool{true}},
		{"too late", []time.Duration{0}, []time.Duration{GestureWindow + time.Millisecond}, []bool{false}},
		{"one click opens one URL", []time.Duration{0}, []time.Duration{time.Second, 2 * time.Second}, []bool{true, false}},
		{"two clicks, two URLs", []time.Duration{0, time.Second}, []time.Duration{2 * time.Second}, []bool{true}},
		{"an input in the future is not trusted", []time.Duration{time.Minute}, []time.Duration{0}, []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g Gestures
			for _, in := range tt.inputs {
				g.Input(t0.Add(in))
			}
			for i, at := range tt.takes {
				if got := g.Take(t0.Add(at)); got != tt.want[i] {
					t.Fatalf("Take #%d at +%v = %v, want %v", i+1, at, got, tt.want[i])
				}
			}
		})
	}
	t.Run("a new input after one was used", func(t *testing.T) {
		var g Gestures
		g.Input(t0)
		g.Take(t0)
		g.Input(t0.Add(time.Second))
		if !g.Take(t0.Add(2 * time.Second)) {
			t.Fatal("the second click was not counted")
		}
	})
}
