package redact

import (
	"net/url"
	"strings"
)

// The rule table: which names hold a secret, and how the secret appears.
// Every redactor of the package (URL, Text, SecretMember) and of the
// packages that use it (netlog's forms, JSON bodies and HAR) reads these
// tables and nothing else.

// class is what a name's value is.
type class int

const (
	public class = iota
	// issued: a secret the server issued from its random source (RFC 6749
	// sections 4.1.2, 4.2.2, 5.1; RFC 7009 and RFC 7662 token; RFC 8628
	// device_code; RFC 8693 subject_token and actor_token; OpenID Connect
	// Core 3.2.2.5): it becomes its Fingerprint.
	issued
	// chosen: a secret someone chose (RFC 6749 sections 2.3.1 and 4.1.1
	// state, RFC 7636 section 4.5, RFC 7523 assertions, RFC 9449 DPoP
	// proofs, passwords, API keys, private keys): Withheld.
	chosen
)

// names are the secret names, as nameKey spells them (no '-' or '_').
var names = map[string]class{
	"code": issued, "accesstoken": issued, "idtoken": issued, "refreshtoken": issued, "token": issued,
	"devicecode": issued, "subjecttoken": issued, "actortoken": issued,

	"state": chosen, "codeverifier": chosen, "clientsecret": chosen, "clientassertion": chosen, "assertion": chosen,
	"dpop": chosen, "password": chosen, "passwd": chosen, "pwd": chosen, "passphrase": chosen, "secret": chosen,
	"apikey": chosen, "privatekey": chosen, "secretkey": chosen,
}

// chosenSuffixes: a name that ends in one of these (client_secret,
// MINIAPP_HOST_SECRET, x-api-key, db_password, newPassword, signing_private_key)
// names a chosen secret, whatever comes before.
var chosenSuffixes = []string{"secret", "password", "passwd", "passphrase", "apikey", "privatekey", "secretkey"}

// jwkPrivate are the private members of a JSON Web Key (RFC 7517 section 4):
// EC and OKP d (RFC 7518 section 6.2.2, RFC 8037 section 2), RSA d, p, q,
// dp, dq, qi and oth (RFC 7518 section 6.3.2), a symmetric key's k (RFC 7518
// section 6.4.1). They are secret in an object that is a JWK (it has
// "kty"), and names like any other elsewhere.
var jwkPrivate = map[string]bool{"d": true, "p": true, "q": true, "dp": true, "dq": true, "qi": true, "oth": true, "k": true}

// paramName is how a parameter or member name is compared: percent-decoded,
// from its last ?, #, & or ; on (a lenient reader's parameter separators:
// a form field or a JSON member named "x?code" reads as code), trimmed,
// without a trailing "[]" (PHP's array syntax), in lower case.
func paramName(name string) string {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	if i := strings.LastIndexAny(name, "?#&;"); i >= 0 {
		name = name[i+1:]
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "[]"))
}

// nameKey is paramName without '-' and '_': access_token, access-token and
// accessToken are one name.
func nameKey(name string) string { return separators.Replace(paramName(name)) }

var separators = strings.NewReplacer("-", "", "_", "")

// classOf is the class of the name.
func classOf(name string) class {
	k := nameKey(name)
	if c, ok := names[k]; ok {
		return c
	}
	for _, s := range chosenSuffixes {
		if strings.HasSuffix(k, s) {
			return chosen
		}
	}
	return public
}

// ChosenSecretParam reports whether a parameter or member named name holds
// a secret the server did not issue, which gets Withheld, never a
// Fingerprint.
func ChosenSecretParam(name string) bool { return classOf(name) == chosen }

// SecretParam reports whether a parameter or member named name holds a
// secret, or a value that correlates with one: a code or token (a
// Fingerprint stands for it) or a value ChosenSecretParam withholds.
func SecretParam(name string) bool { return classOf(name) != public }

// isJWK reports whether a decoded JSON object is a JSON Web Key: it has
// "kty" (RFC 7517 section 4.1).
func isJWK(obj map[string]any) bool {
	_, ok := obj["kty"]
	return ok
}

// SecretMember reports whether the member name of the decoded JSON object
// obj holds a secret: a SecretParam, or a private member of a JWK.
func SecretMember(obj map[string]any, name string) bool {
	return SecretParam(name) || isJWK(obj) && jwkPrivate[name]
}

// ChosenSecretMember reports whether the member name of obj holds a secret
// that is Withheld (ChosenSecretParam, a JWK's private member), not
// fingerprinted.
func ChosenSecretMember(obj map[string]any, name string) bool {
	return ChosenSecretParam(name) || isJWK(obj) && jwkPrivate[name]
}
