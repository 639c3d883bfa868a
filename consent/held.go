package consent

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/miniapp-host/miniapp-host/catalog"
)

// What a subject holds: the entries of a grant (docs/service.md §2.6) as the
// consent screen showed them, for the subject's own list of its grants
// (docs/authserver.md, "Connected Miniapps").

// Held returns the permissions of a grant, one per scope and per granted
// authorization_details object, with their catalog meanings, actions and
// limits as the consent screen shows them, and Requires filled in when the
// catalog reads the grant as a valid request (the catalog rules between
// entries: revoking an entry revokes those that require it). Index is the
// object's position in the grant's authorization_details. A detail whose
// type the catalog no longer has is shown by its type name alone.
func Held(cat *catalog.Catalog, scopes []string, details json.RawMessage, orgID string) []Permission {
	req := catalog.Request{Scope: strings.Join(scopes, " "), OrgID: orgID}
	for _, s := range scopes {
		if sc, ok := cat.Scope(s); ok && !slices.Contains(req.Resource, sc.Resource) {
			req.Resource = append(req.Resource, sc.Resource)
		}
	}
	objs := detailObjects(details)
	if len(objs) > 0 {
		req.AuthorizationDetails = details
	}
	if res := cat.Check(req); res.Valid() && len(res.Details) == len(objs) {
		return Build(cat, Input{Result: res, OrgID: orgID}).Permissions
	}
	out := []Permission{}
	for _, s := range scopes {
		sc, _ := cat.Scope(s)
		out = append(out, Permission{Kind: KindScope, Name: s, Meaning: sc.Meaning, Fixed: s == "openid"})
	}
	for i, obj := range objs {
		name := str(obj["type"])
		p := Permission{Kind: KindDetail, Name: name, Index: &i, Limits: limitsOf(obj)}
		if t, ok := cat.Type(name); ok {
			p.Key, p.Meaning, p.Provider, p.Resource = t.Key, t.Meaning, string(t.Provider), t.Resource
			for _, a := range catalog.Strings(obj["actions"]) {
				act, _ := t.Action(a)
				p.Actions = append(p.Actions, Action{Name: a, Meaning: act.Meaning})
			}
		}
		out = append(out, p)
	}
	return out
}

// detailObjects decodes a grant's authorization_details, numbers as
// json.Number; nil when there are none or they do not decode.
func detailObjects(details json.RawMessage) []map[string]any {
	var raw []json.RawMessage
	if json.Unmarshal(details, &raw) != nil {
		return nil
	}
	out := make([]map[string]any, 0, len(raw))
	for _, r := range raw {
		obj, err := decodeObject(r)
		if err != nil {
			return nil
		}
		out = append(out, obj)
	}
	return out
}

func decodeObject(text []byte) (map[string]any, error) {
	d := json.NewDecoder(strings.NewReader(string(text)))
	d.UseNumber()
	var obj map[string]any
	err := d.Decode(&obj)
	return obj, err
}

// Revoked returns the entries that revoking the entry named entry (a value
// of Permission.Entry) takes away: itself, and every entry that is held
// only together with it (Permission.Requires). ok is false when held has
// no such entry.
func Revoked(held []Permission, entry string) (out []Permission, ok bool) {
	i := slices.IndexFunc(held, func(p Permission) bool { return p.Entry() == entry })
	if i < 0 {
		return nil, false
	}
	p := held[i]
	out = append(out, p)
	for _, q := range held {
		if slices.ContainsFunc(q.Requires, func(r Requirement) bool {
			return r.Kind == p.Kind && r.Name == p.Name && sameIndex(r.Index, p.Index)
		}) {
			out = append(out, q)
		}
	}
	return out, true
}

// Forget returns the keys of a remembered consent (Keys) without the one
// of a held entry: "scope " and its name for a scope; for a granted object,
// every remembered object it was granted from. An object is granted as it
// was requested, except that an approval binds the chosen account in place
// of `selection` (`identifiers`, `sources`), so a remembered object matches
// when the two are equal without those members. Two requested objects
// that differ only in them are both forgotten: the next sign-in asks again
// for each, never for less.
func Forget(keys []string, p Permission, granted json.RawMessage) []string {
	if p.Kind == KindScope {
		return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "scope "+p.Name })
	}
	g, err := decodeObject(granted)
	if err != nil {
		return slices.Clone(keys)
	}
	want := unbound(g)
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		text, ok := strings.CutPrefix(k, "detail ")
		if !ok {
			return false
		}
		obj, err := decodeObject([]byte(text))
		return err == nil && unbound(obj) == want
	})
}

// HeldBy reports whether a grant of scopes and authorization_details
// holds the entry a remembered consent's key names (Keys): the scope
// itself, or an object granted from the remembered one (Forget's match).
func HeldBy(key string, scopes []string, details json.RawMessage) bool {
	if name, ok := strings.CutPrefix(key, "scope "); ok {
		return slices.Contains(scopes, name)
	}
	var raw []json.RawMessage
	if json.Unmarshal(details, &raw) != nil {
		return false
	}
	for _, d := range raw {
		if len(Forget([]string{key}, Permission{Kind: KindDetail}, d)) == 0 {
			return true
		}
	}
	return false
}

// unbound is an object's canonical JSON without the members an approval
// binds an account in.
func unbound(obj map[string]any) string {
	c := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "selection" && k != "identifiers" && k != "sources" {
			c[k] = v
		}
	}
	js, _ := json.Marshal(c)
	return string(js)
}
