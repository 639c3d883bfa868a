// Package httplimit bounds what one peer can hold of the reference
// server's HTTP listeners: the timeouts and header size of an http.Server
// (Config, Server), a cap on concurrent connections per source address
// (Listener), and a body reader that answers an oversized body with a
// typed error a handler turns into 413 Content Too Large (RFC 9110
// §15.5.14) and reads JSON with the one strict reader, package strictjson
// (ReadBody, ReadJSON, TooLarge).
//
// Every listener of package authserver (service, dashboard, providers)
// goes through Server and Listener, so a stalled or flooding peer meets
// the same limits on each; docs/authserver.md lists the values.
package httplimit
