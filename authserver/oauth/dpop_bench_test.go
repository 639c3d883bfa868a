package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// BenchmarkDPoPProof verifies one DPoP proof (RFC 9449 §4.3) as the token
// endpoint does, for each algorithm a client may use: the JOSE header, the
// signature by the embedded jwk, the key's thumbprint (RFC 7638) and the
// claims (htm, htu, iat, ath). The jti's single use (replay.go, a map
// insertion on a server that owns its SQLite database) is left out.
// Besides ns/op (wall time) it reports cpu-µs/op, the process's CPU per
// proof, which a loaded shared machine inflates less. BENCHMARKS.md,
// "FAPI 2.0", has the figures.
func BenchmarkDPoPProof(b *testing.B) {
	const htu = "http://127.0.0.1:8600/oauth/token"
	now := time.Now()
	for _, tc := range []struct {
		alg jose.SignatureAlgorithm
		key func() (crypto.Signer, error)
	}{
		{jose.ES256, func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }},
		{jose.EdDSA, func() (crypto.Signer, error) { _, k, err := ed25519.GenerateKey(rand.Reader); return k, err }},
		{jose.PS256, func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 2048) }},
	} {
		b.Run(string(tc.alg), func(b *testing.B) {
			k, err := tc.key()
			if err != nil {
				b.Fatal(err)
			}
			opts := (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt")
			sg, err := jose.NewSigner(jose.SigningKey{Algorithm: tc.alg, Key: k}, opts)
			if err != nil {
				b.Fatal(err)
			}
			payload, _ := json.Marshal(map[string]any{"jti": "e1j3V_bKic8-LAEB", "htm": "POST", "htu": htu, "iat": now.Unix()})
			jws, err := sg.Sign(payload)
			if err != nil {
				b.Fatal(err)
			}
			proof, err := jws.CompactSerialize()
			if err != nil {
				b.Fatal(err)
			}
			pc := proofCheck{method: http.MethodPost, htu: sameURL(htu)}
			b.ReportAllocs()
			c0 := processCPU()
			for b.Loop() {
				c, jkt, msg := readProof(proof)
				if msg == "" {
					msg = c.refusal(pc, now)
				}
				if msg != "" || jkt == "" {
					b.Fatalf("proof refused: %s", msg)
				}
			}
			b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
