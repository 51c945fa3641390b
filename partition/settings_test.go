package partition

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFaults(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		want    Faults
		setting string // of the SettingError, when refused
		problem string
	}{
		{spec: "seed=7,busy=0.5,timeout=0.25,kinds=insert+query,continuation-every=3,offline-on-split,offline-for=2s",
			want: Faults{Seed: 7, ServerBusy: 0.5, Timeout: 0.25, Kinds: Kinds(KindInsert, KindQuery), ContinuationEvery: 3,
				OfflineOnSplit: true, OfflineFor: 2 * time.Second}},
		{spec: "kinds=writes+reads", want: Faults{Kinds: WriteKinds | ReadKinds}},
		{spec: "kinds=INSERT", want: Faults{Kinds: Kinds(KindInsert)}},
		{spec: "offline-on-split=false", want: Faults{}},
		{spec: "continuation-every=0", want: Faults{}}, // none, as the management API takes it
		{spec: "busy=1", want: Faults{ServerBusy: 1}},
		{spec: "busy=2", setting: "busy", problem: "must be a probability from 0 to 1, not 2"},
		{spec: "busy=-0.1", setting: "busy", problem: "probability"},
		{spec: "busy=x", setting: "busy", problem: `must be a probability from 0 to 1, not "x"`},
		{spec: "busy=0.6,timeout=0.6", setting: "timeout", problem: "busy + timeout is 1.2; together they must not exceed 1"},
		{spec: "seed=x", setting: "seed", problem: `not "x"`},
		{spec: "kinds=fly", setting: "kinds", problem: `"fly" is not an operation kind; the kinds are get, query, insert`},
		{spec: "loud", setting: "loud", problem: "is not a fault setting; the settings are seed, busy"},
		{spec: "continuation-every=-1", setting: "continuation-every", problem: "not -1"},
		{spec: "offline-for=0s", setting: "offline-for", problem: "positive duration"},
		{spec: "offline-for=soon", setting: "offline-for", problem: `not "soon"`},
		{spec: "offline-on-split=maybe", setting: "offline-on-split", problem: "true or false"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			f, err := ParseFaults(tc.spec)
			if tc.setting == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, f)
				return
			}
			var se *SettingError
			require.True(t, errors.As(err, &se), "%v", err)
			assert.Equal(t, tc.setting, se.Setting)
			assert.Contains(t, se.Problem, tc.problem)
		})
	}
}

func TestParseLimitModeAndKinds(t *testing.T) {
	for name, want := range map[string]LimitMode{"off": LimitOff, "Observe": LimitObserve, "ENFORCE": LimitEnforce} {
		m, err := ParseLimitMode(name)
		require.NoError(t, err)
		assert.Equal(t, want, m, name)
	}
	_, err := ParseLimitMode("fast")
	assert.EqualError(t, err, `mode: "fast" is not a limit mode; use off, observe or enforce`)

	set, err := ParseKinds()
	require.NoError(t, err)
	assert.Zero(t, set, "no names: the empty set, every kind to a Faults")
	set, err = ParseKinds("all")
	require.NoError(t, err)
	assert.Equal(t, AllKinds, set)
	for k := Kind(0); k < numKinds; k++ {
		set, err := ParseKinds(k.String())
		require.NoError(t, err)
		assert.Equal(t, Kinds(k), set, "every kind by its own name")
	}
}

func TestCheckRateAndBurst(t *testing.T) {
	assert.NoError(t, CheckRate("partition-rate", 0.5))
	assert.ErrorContains(t, CheckRate("partition-rate", 0), "partition-rate: must be a positive number of entities per second, not 0")
	assert.NoError(t, CheckBurst("account-burst", 1))
	assert.ErrorContains(t, CheckBurst("account-burst", 0.5), "account-burst: must be a number of entities, at least 1; not 0.5")
}

// Whatever a faults spec says, parsing it neither panics nor accepts a probability outside [0, 1].
func FuzzParseFaults(f *testing.F) {
	f.Add("seed=7,busy=0.5,timeout=0.25,kinds=insert+query,continuation-every=3,offline-on-split,offline-for=2s")
	f.Add("busy=NaN")
	f.Add("kinds=reads+writes+all")
	f.Add("offline-on-split=maybe")
	f.Fuzz(func(t *testing.T, spec string) {
		faults, err := ParseFaults(spec)
		if err != nil {
			return
		}
		for _, p := range []float64{faults.ServerBusy, faults.Timeout} {
			if !(p >= 0 && p <= 1) {
				t.Fatalf("%q: probability %v accepted", spec, p)
			}
		}
		if faults.ServerBusy+faults.Timeout > 1 {
			t.Fatalf("%q: probabilities summing over 1 accepted", spec)
		}
		if faults.ContinuationEvery < 0 {
			t.Fatalf("%q: continuation-every %d accepted", spec, faults.ContinuationEvery)
		}
	})
}
