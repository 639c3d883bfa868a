package oauth

import (
	"context"
	"testing"
	"time"

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
