package partition

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The grammar of the limit mode, operation kinds and faults as people write them: on
// cmd/tabula's command line (--limits, --faults "seed=7,busy=0.01,kinds=insert+query") and in
// the server's management API (JSON with the same values). One grammar, so the two accept and
// refuse the same settings with the same words.

// A SettingError is a setting that breaks the grammar or a rule. Setting names it as a
// --faults spec does (busy, timeout, kinds, continuation-every, offline-on-split, offline-for,
// seed) or as mode, partition-rate, account-rate, partition-burst, account-burst; front ends
// that name settings otherwise map the name.
type SettingError struct {
	Setting string
	Problem string // such as `must be a probability from 0 to 1, not 1.5`
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Problem }

func settingError(setting, format string, args ...any) *SettingError {
	return &SettingError{Setting: setting, Problem: fmt.Sprintf(format, args...)}
}

// ParseLimitMode reads a LimitMode by its name: off, observe or enforce, in any case.
func ParseLimitMode(s string) (LimitMode, error) {
	for _, m := range []LimitMode{LimitOff, LimitObserve, LimitEnforce} {
		if strings.EqualFold(s, m.String()) {
			return m, nil
		}
	}
	return 0, settingError("mode", "%q is not a limit mode; use off, observe or enforce", s)
}

// kindGroups are the names of sets of kinds, beside each kind's own name.
var kindGroups = []struct {
	name string
	set  KindSet
}{{"all", AllKinds}, {"reads", ReadKinds}, {"writes", WriteKinds}}

// ParseKinds reads operation kinds by name (insert, query, …, in any case) or by group
// (reads, writes, all). No names is the empty set, which a Faults takes as every kind.
func ParseKinds(names ...string) (KindSet, error) {
	var set KindSet
next:
	for _, name := range names {
		for _, g := range kindGroups {
			if strings.EqualFold(name, g.name) {
				set |= g.set
				continue next
			}
		}
		for k := Kind(0); k < numKinds; k++ {
			if strings.EqualFold(name, k.String()) {
				set |= Kinds(k)
				continue next
			}
		}
		return 0, settingError("kinds", "%q is not an operation kind; the kinds are %s, or the groups reads, writes and all",
			name, strings.Join(kindNames[:], ", "))
	}
	return set, nil
}

// CheckRate checks a rate of a limit (partition-rate, account-rate): more than 0 entities/s.
func CheckRate(setting string, v float64) error {
	if !(v > 0) {
		return settingError(setting, "must be a positive number of entities per second, not %s", formatFloat(v))
	}
	return nil
}

// CheckBurst checks a bucket size given explicitly (partition-burst, account-burst): at
// least 1 entity.
func CheckBurst(setting string, v float64) error {
	if !(v >= 1) {
		return settingError(setting, "must be a number of entities, at least 1; not %s", formatFloat(v))
	}
	return nil
}

// Check reports the first rule f breaks: each probability from 0 to 1 and the two together
// at most 1, ContinuationEvery 0 (none) or more, OfflineFor 0 (the default) or more.
func (f Faults) Check() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"busy", f.ServerBusy}, {"timeout", f.Timeout}} {
		if !(p.v >= 0 && p.v <= 1) {
			return settingError(p.name, "must be a probability from 0 to 1, not %s", formatFloat(p.v))
		}
	}
	if sum := f.ServerBusy + f.Timeout; sum > 1 {
		return settingError("timeout", "busy + timeout is %s; together they must not exceed 1", formatFloat(sum))
	}
	if f.ContinuationEvery < 0 {
		return settingError("continuation-every", "must be a number of entities, or 0 for none; not %d", f.ContinuationEvery)
	}
	if f.OfflineFor < 0 {
		return settingError("offline-for", "must be a positive duration such as 3s or 500ms, not %v", f.OfflineFor)
	}
	return nil
}

// faultSettings are the settings of a faults spec, in the order the help names them.
var faultSettings = []string{"seed", "busy", "timeout", "kinds", "continuation-every", "offline-on-split", "offline-for"}

// ParseFaults reads faults written as "seed=7,busy=0.01,timeout=0.005,kinds=insert+query,
// continuation-every=100,offline-on-split,offline-for=3s" (any subset, any order) and checks
// them (see Faults.Check).
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	for _, item := range strings.Split(spec, ",") {
		k, v, hasValue := strings.Cut(strings.TrimSpace(item), "=")
		if err := f.set(k, v, hasValue); err != nil {
			return Faults{}, err
		}
	}
	return f, f.Check()
}

// set applies one setting of a faults spec.
func (f *Faults) set(k, v string, hasValue bool) error {
	number := func(err error, want string) error {
		if err != nil {
			return settingError(k, "must be %s, not %q", want, v)
		}
		return nil
	}
	var err error
	switch k {
	case "seed":
		f.Seed, err = strconv.ParseUint(v, 10, 64)
		return number(err, "a whole number from 0")
	case "busy":
		f.ServerBusy, err = strconv.ParseFloat(v, 64)
		return number(err, "a probability from 0 to 1")
	case "timeout":
		f.Timeout, err = strconv.ParseFloat(v, 64)
		return number(err, "a probability from 0 to 1")
	case "kinds":
		f.Kinds, err = ParseKinds(strings.Split(v, "+")...)
		return err
	case "continuation-every":
		f.ContinuationEvery, err = strconv.Atoi(v)
		return number(err, "a number of entities, or 0 for none")
	case "offline-on-split":
		switch {
		case !hasValue || v == "true":
			f.OfflineOnSplit = true
		case v == "false":
			f.OfflineOnSplit = false
		default:
			return settingError(k, "must be true or false, not %q", v)
		}
		return nil
	case "offline-for":
		f.OfflineFor, err = ParseOfflineFor(v)
		return err
	}
	return settingError(k, "is not a fault setting; the settings are %s", strings.Join(faultSettings, ", "))
}

// ParseOfflineFor reads how long a splitting range stays offline: a positive duration.
func ParseOfflineFor(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, settingError("offline-for", "must be a positive duration such as 3s or 500ms, not %q", v)
	}
	return d, nil
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
