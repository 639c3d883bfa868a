package oauth

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/miniapp-host/miniapp-host/authserver/store/storetest"

	"github.com/miniapp-host/miniapp-host/authserver/store"
)

// BenchmarkIDTokenSign signs one ID token with each algorithm a client may
// register: what an openid flow's token response costs in signing.
func BenchmarkIDTokenSign(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DB(b))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ks, err := loadKeys(ctx, st, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	claims := idClaims{Iss: "http://127.0.0.1:8600", Sub: "sub_ana", Aud: "demo-confidential", Azp: "demo-confidential",
		Exp: now.Add(10 * time.Minute).Unix(), Iat: now.Unix(), AuthTime: now.Unix(), Nonce: "n-0123456789"}
	for _, alg := range store.IDTokenAlgs {
		b.Run(alg, func(b *testing.B) {
			for b.Loop() {
				if _, err := sign(ks.id[alg], claims); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAccessTokenSign signs one access token (ES256, typ at+jwt) as
// the token endpoint does, and with go-jose's signer, which the server
// used before jwsSigner, for comparison.
func BenchmarkAccessTokenSign(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DB(b))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ks, err := loadKeys(ctx, st, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	claims := accessClaims{Jti: "AAZhD0o2ztAlWCwCJdsUs7R2ES5uO43r", Iss: "http://127.0.0.1:8600", Sub: "sub_ana",
		Aud: "http://127.0.0.1:8600/bank", Exp: now.Add(10 * time.Minute).Unix(), Iat: now.Unix(),
		ClientID: "demo-confidential", Scope: "bank_accounts:read"}
	b.Run("jwsSigner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sign(ks.access, claims); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-jose", func(b *testing.B) {
		sg, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: ks.access.key}, (&jose.SignerOptions{}).WithType("at+jwt"))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			payload, _ := json.Marshal(claims)
			jws, err := sg.Sign(payload)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := jws.CompactSerialize(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
