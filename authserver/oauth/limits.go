package oauth

import (
	"fmt"
	"sort"
)

// Length limits of authorization request parameters, in bytes of the
// decoded value. RFC 6749 sets none, but every value is held in memory
// while the request waits for consent and state is echoed in a URL, so
// each is bounded well above what a real client sends: Connect2id caps
// state at 1,024 characters in query responses and nonce at 128,
// Wristband state at 2,000; browsers and proxies start failing URLs near
// 8 KiB. docs/authserver.md (Limits) lists them.
const (
	maxStateBytes     = 2048
	maxNonceBytes     = 512
	maxURIBytes       = 2048 // redirect_uri and each resource
	maxScopeBytes     = 2048
	maxClientIDBytes  = 256
	maxShortBytes     = 128 // prompt, org_id, response_type, response_mode, code_challenge(_method)
	maxHintBytes      = 512 // login_hint, acr_values, ui_locales, claims_locales
	maxDetailsBytes   = 48 << 10
	maxOtherBytes     = 2048 // any other parameter
	maxResources      = 16   // resource values (RFC 8707 allows several)
	maxParamValues    = 64   // parameter values in all
	maxAuthorizeBytes = 64 << 10
)

// paramLimits is the limit of each named parameter; others get
// maxOtherBytes.
var paramLimits = map[string]int{
	"state": maxStateBytes, "nonce": maxNonceBytes, "redirect_uri": maxURIBytes, "resource": maxURIBytes,
	"scope": maxScopeBytes, "client_id": maxClientIDBytes, "authorization_details": maxDetailsBytes,
	"prompt": maxShortBytes, "org_id": maxShortBytes, "response_type": maxShortBytes, "response_mode": maxShortBytes,
	"code_challenge": maxShortBytes, "code_challenge_method": maxShortBytes, "max_age": maxShortBytes, "display": maxShortBytes,
	"login_hint": maxHintBytes, "acr_values": maxHintBytes, "ui_locales": maxHintBytes, "claims_locales": maxHintBytes,
}

// limitOf is a parameter's length limit.
func limitOf(name string) int {
	if n, ok := paramLimits[name]; ok {
		return n
	}
	return maxOtherBytes
}

// paramTooLong is an authorization request over one of the limits: Param
// names the parameter ("" for the request as a whole) and Count says that
// the limit is on a number of values rather than on bytes.
type paramTooLong struct {
	Param      string
	Limit, Len int
	Count      bool
}

// checkLimits finds the first limit an authorization request is over:
// the number of values, the total size of names and values, the number of
// resource values, then each parameter in name order (so the answer is
// the same at every try).
func checkLimits(q map[string][]string) *paramTooLong {
	values, total := 0, 0
	for k, vs := range q {
		values += len(vs)
		for _, v := range vs {
			total += len(k) + len(v)
		}
	}
	if values > maxParamValues {
		return &paramTooLong{Limit: maxParamValues, Len: values, Count: true}
	}
	if total > maxAuthorizeBytes {
		return &paramTooLong{Limit: maxAuthorizeBytes, Len: total}
	}
	if n := len(q["resource"]); n > maxResources {
		return &paramTooLong{Param: "resource", Limit: maxResources, Len: n, Count: true}
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if len(k) > maxOtherBytes {
			return &paramTooLong{Param: k[:32] + "...", Limit: maxOtherBytes, Len: len(k)}
		}
		for _, v := range q[k] {
			if lim := limitOf(k); len(v) > lim {
				return &paramTooLong{Param: k, Limit: lim, Len: len(v)}
			}
		}
	}
	return nil
}

// err is the invalid_request naming the parameter and the limit.
func (p *paramTooLong) err() *Error {
	var d string
	switch {
	case p.Count && p.Param == "":
		d = fmt.Sprintf("the request has %d parameter values; the limit is %d", p.Len, p.Limit)
	case p.Count:
		d = fmt.Sprintf("%s is sent %d times; the limit is %d", p.Param, p.Len, p.Limit)
	case p.Param == "":
		d = fmt.Sprintf("the request's parameters total %d bytes; the limit is %d bytes", p.Len, p.Limit)
	default:
		d = fmt.Sprintf("%s is %d bytes long; the limit is %d bytes", p.Param, p.Len, p.Limit)
	}
	return oauthErr(codeInvalidRequest, d)
}
