package estimate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/policy"
)

// Downstream refuses, before anything is fitted, what has no downstream ratio: an unknown policy,
// one that is not a packing max-min policy (the ratio is 0 or 1 whatever the estimate), and no
// GPUs. Before, it took any name and failed (or scored 1) only after the first seed's fits.
func TestDownstreamRefusesUpFront(t *testing.T) {
	for _, tt := range []struct {
		policy string
		gpus   int
		want   string
	}{
		{"no_such_policy", 4, "no_such_policy"},
		{"fifo", 4, "policy fifo: the downstream ratio is the max-min fairness objective"},
		{"max_min_fairness_perf", 4, "want one of max_min_fairness_packed"},
		{"max_min_fairness_packed", 0, "0 GPUs per worker type"},
	} {
		f, err := Downstream(tt.policy, tt.gpus)
		if err == nil || f != nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Downstream(%q, %d) = %v, %v; want no function and an error naming %q", tt.policy, tt.gpus, f != nil, err, tt.want)
		}
	}
	var unknown *policy.UnknownPolicyError
	if _, err := Downstream("no_such_policy", 4); !errors.As(err, &unknown) {
		t.Errorf("unknown policy: err %v, want policy.New's *UnknownPolicyError", err)
	}
}

func TestDownstreamPolicies(t *testing.T) {
	got := DownstreamPolicies()
	if !slices.Contains(got, "max_min_fairness_packed") || !slices.Contains(got, "max_min_fairness_water_filling_packed") ||
		slices.Contains(got, "max_min_fairness_perf") || slices.Contains(got, "fifo_packed") || !slices.IsSorted(got) {
		t.Errorf("DownstreamPolicies() = %v", got)
	}
	for _, n := range got {
		if _, err := Downstream(n, 1); err != nil {
			t.Errorf("Downstream(%q, 1): %v", n, err)
		}
	}
}

// The score uses the ctx it is given (Evaluate's), not one fixed when it was made: a canceled
// one stops it.
func TestDownstreamScore(t *testing.T) {
	truth := gavelBlock(t)
	_, r := partnerMeanHoldout(t, truth)
	score, err := Downstream("max_min_fairness_packed", 4)
	if err != nil {
		t.Fatal(err)
	}
	v, err := score(context.Background(), truth, r)
	if err != nil || !(v > 0 && v <= 1+1e-6) {
		t.Errorf("score = %v, %v; want a ratio in (0, 1]", v, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if v, err := score(ctx, truth, r); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: score = %v, %v; want context.Canceled", v, err)
	}
}
