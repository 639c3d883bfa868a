package consent

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestHeldAndRevoked: a grant made from threeDetails (the account bound
// in place of the selection) reads back with its meanings; revoking
// company-identity takes company-addresses along and the reverse, a scope
// goes alone, and an entry the grant does not hold is not found.
func TestHeldAndRevoked(t *testing.T) {
	m, res := build(t, "openid profile", threeDetails, "org")
	acct := candidates[0].ID
	d := Decision{Action: Approve, AccountID: acct}
	if err := m.Validate(d); err != nil {
		t.Fatal(err)
	}
	granted, err := GrantedDetails(res, d)
	if err != nil {
		t.Fatal(err)
	}
	held := Held(newCatalog(t), []string{"openid", "profile"}, granted, "org")
	var names []string
	for _, p := range held {
		if p.Meaning == "" {
			t.Errorf("%s has no meaning", p.Entry())
		}
		names = append(names, p.Entry())
	}
	if strings.Join(names, ",") != "scope openid,scope profile,detail 0,detail 1,detail 2" || !held[0].Fixed {
		t.Fatalf("held: %v (openid fixed: %v)", names, held[0].Fixed)
	}
	if l := held[2].Limits; l == nil || !slices.Equal(l.Identifiers, []string{acct}) {
		t.Errorf("the bank_account detail's bound account: %+v", l)
	}
	for entry, want := range map[string]string{"detail 1": "detail 1,detail 2", "detail 2": "detail 2,detail 1", "scope profile": "scope profile", "detail 0": "detail 0"} {
		gone, ok := Revoked(held, entry)
		var got []string
		for _, p := range gone {
			got = append(got, p.Entry())
		}
		if !ok || strings.Join(got, ",") != want {
			t.Errorf("revoking %s takes %v, want %s", entry, got, want)
		}
	}
	if _, ok := Revoked(held, "scope email"); ok {
		t.Error("an entry not held was found")
	}
}

// approvedThree approves "openid profile" with threeDetails for the first
// candidate account: the remembered keys, the granted authorization_details
// and its objects.
func approvedThree(t *testing.T) (keys []string, granted json.RawMessage, objs []json.RawMessage) {
	t.Helper()
	m, res := build(t, "openid profile", threeDetails, "org")
	d := Decision{Action: Approve, AccountID: candidates[0].ID}
	if err := m.Validate(d); err != nil {
		t.Fatal(err)
	}
	granted, _ = GrantedDetails(res, d)
	if err := json.Unmarshal(granted, &objs); err != nil {
		t.Fatal(err)
	}
	return Keys(res), granted, objs
}

// TestForget: the remembered consent of threeDetails loses the scope
// profile by name, and the bank_account detail, requested by selection
// and granted with the chosen account, by its granted object; the other
// keys stay.
func TestForget(t *testing.T) {
	keys, granted, objs := approvedThree(t)
	held := Held(newCatalog(t), []string{"openid", "profile"}, granted, "org")
	left := Forget(keys, held[1], nil)
	if len(left) != len(keys)-1 || slices.Contains(left, "scope profile") {
		t.Fatalf("after forgetting profile: %q", left)
	}
	left = Forget(left, held[2], objs[0])
	if len(left) != len(keys)-2 || slices.ContainsFunc(left, func(k string) bool { return strings.Contains(k, `"bank_account"`) }) {
		t.Fatalf("after forgetting the bank_account detail: %q", left)
	}
	if !slices.Contains(left, "scope openid") || !slices.ContainsFunc(left, func(k string) bool { return strings.Contains(k, "company-identity") }) {
		t.Fatalf("forgot too much: %q", left)
	}
}

// TestHeldBy: a grant holds the remembered key of each of its scopes and
// of each object it was granted from (the bank_account detail requested by
// selection, granted with the chosen account), and no other: a scope it
// does not have, an object it was not granted from.
func TestHeldBy(t *testing.T) {
	keys, granted, objs := approvedThree(t)
	for _, k := range keys {
		if !HeldBy(k, []string{"openid", "profile"}, granted) {
			t.Errorf("the grant does not hold its own key %q", k)
		}
	}
	if HeldBy("scope email", []string{"openid", "profile"}, granted) {
		t.Error("holds a scope it was not granted")
	}
	// A grant of openid alone, without the bank_account object, holds
	// neither profile's key nor the object's; it still holds the others.
	rest, _ := json.Marshal(objs[1:])
	for _, k := range keys {
		want := k != "scope profile" && !strings.Contains(k, `"bank_account"`)
		if got := HeldBy(k, []string{"openid"}, rest); got != want {
			t.Errorf("HeldBy(%q) without profile and the bank_account object: %v, want %v", k, got, want)
		}
	}
	if HeldBy(keys[len(keys)-1], nil, json.RawMessage(`not json`)) {
		t.Error("undecodable details hold a key")
	}
}
