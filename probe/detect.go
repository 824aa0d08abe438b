package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// detect tells which API the server speaks from what its discovery routes
// answer, most informative API first: TGI also serves /v1/models, and
// llorch-check serve speaks all but TGI's.
func detect(ctx context.Context, c *client) (name, how string, err error) {
	var info struct {
		ModelID string `json:"model_id"`
	}
	ok, err := c.probeGET(ctx, "/info", &info)
	if err != nil {
		return "", "", err
	}
	if ok && info.ModelID != "" {
		return "tgi", fmt.Sprintf("detected: GET /info named model_id %q, TGI's router", info.ModelID), nil
	}
	var models openAIModels
	if ok, _ := c.probeGET(ctx, "/v1/models", &models); ok && models.Object == "list" {
		return "openai", "detected: GET /v1/models answered a model list", nil
	}
	var health struct {
		ModelLoaded *bool `json:"model_loaded"`
	}
	if ok, _ := c.probeGET(ctx, "/health", &health); ok && health.ModelLoaded != nil {
		var ready struct {
			Status string `json:"status"`
		}
		if ok, _ := c.probeGET(ctx, "/readyz", &ready); ok && ready.Status != "" {
			return "llorch", "detected: GET /health answered as a llama-orch worker and GET /readyz as the batch API", nil
		}
		return "worker", "detected: GET /health answered as a llama-orch worker (model_loaded)", nil
	}
	return "", "", fmt.Errorf("%w: %s answered none of GET /info (TGI), /v1/models (OpenAI), /health (llama-orch worker) as those APIs do; name the API with --api", ErrServer, c.base)
}

// probeGET reports whether path answered 200 with JSON that decodes into
// out; err is only for a server that cannot be reached at all.
func (c *client) probeGET(ctx context.Context, path string, out any) (bool, error) {
	resp, err := c.request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return false, nil
	}
	return json.Unmarshal(data, out) == nil, nil
}
