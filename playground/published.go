package playground

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/miniapp-host/miniapp-host/jsonhttp"
)

// dashboardMiniapps reads the Miniapps approved on the playground's own
// dashboard (GET {dashboard_url}/api/miniapps, docs/dashboard.md): the
// default Config.Published.
func (p *Playground) dashboardMiniapps(ctx context.Context) ([]Entry, error) {
	u := strings.TrimSuffix(p.world.urls.Dashboard, "/") + "/api/miniapps"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	var out struct {
		Miniapps []struct {
			ID         string `json:"id"`
			Name       string `json:"name"`
			Origin     string `json:"origin"`
			ClientID   string `json:"client_id"`
			ProjectID  string `json:"project_id"`
			ApprovedAt string `json:"approved_at"`
		} `json:"miniapps"`
	}
	if _, err := jsonhttp.Call(p.cfg.HTTP, req, 4<<20, &out); err != nil {
		return nil, fmt.Errorf("the dashboard's Miniapps: %w", err)
	}
	list := make([]Entry, 0, len(out.Miniapps))
	for _, m := range out.Miniapps {
		list = append(list, Entry{ID: m.ID, Name: m.Name, Origin: m.Origin, Kind: KindPublished,
			Description: fmt.Sprintf("Published by project %s (client %s), approved %s.", m.ProjectID, m.ClientID, m.ApprovedAt)})
	}
	return list, nil
}
