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
	seen := map[string]string{}
	c.seen = seen
	defer func() { c.seen = nil }()
	ok, err := c.probeGET(ctx, "/info", &info)
	if err != nil {
		return "", "", err
	}
	if ok && info.ModelID != "" {
		return "tgi", fmt.Sprintf("detected: GET /info named model_id %q, TGI's router", info.ModelID), nil
	}
	var props struct {
		Settings map[string]any `json:"default_generation_settings"`
	}
	if ok, err = c.probeGET(ctx, "/props", &props); err != nil {
		return "", "", err
	} else if ok && props.Settings != nil {
		return "llamacpp", "detected: GET /props answered default_generation_settings, llama.cpp's server", nil
	}
	var version struct {
		Version string `json:"version"`
	}
	if ok, err = c.probeGET(ctx, "/api/version", &version); err != nil {
		return "", "", err
	} else if ok && version.Version != "" {
		return "ollama", fmt.Sprintf("detected: GET /api/version answered Ollama's version %q", version.Version), nil
	}
	var models openAIModels
	if ok, err = c.probeGET(ctx, "/v1/models", &models); err != nil {
		return "", "", err
	} else if ok && models.Object == "list" {
		for _, m := range models.Data {
			if m.OwnedBy == "llamacpp" {
				return "llamacpp", "detected: GET /v1/models lists a model owned_by llamacpp", nil
			}
		}
		return "openai", "detected: GET /v1/models answered a model list", nil
	}
	var health struct {
		ModelLoaded *bool `json:"model_loaded"`
	}
	if ok, err = c.probeGET(ctx, "/health", &health); err != nil {
		return "", "", err
	} else if ok && health.ModelLoaded != nil {
		var ready struct {
			Status string `json:"status"`
		}
		if ok, err = c.probeGET(ctx, "/readyz", &ready); err != nil {
			return "", "", err
		} else if ok && ready.Status != "" {
			return "llorch", "detected: GET /health answered as a llama-orch worker and GET /readyz as the batch API", nil
		}
		return "worker", "detected: GET /health answered as a llama-orch worker (model_loaded)", nil
	}
	return "", "", fmt.Errorf("%w: %s answered none of GET /info (TGI: %s), /props (llama.cpp: %s), /api/version (Ollama: %s), /v1/models (OpenAI: %s), /health (llama-orch worker: %s) as those APIs do; name the API with --api",
		ErrServer, c.base, seen["/info"], seen["/props"], seen["/api/version"], seen["/v1/models"], seen["/health"])
}

// probeGET reports whether path answered 200 with JSON that decodes into
// out; err is for a server that cannot be reached at all, or that wants
// an API key (401, 403): detection would otherwise pass over the API that
// refused and pick one that answers without it, then fail there.
func (c *client) probeGET(ctx context.Context, path string, out any) (bool, error) {
	resp, err := c.request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case err != nil:
		c.saw(path, "reading the answer: "+err.Error())
	case c.keyHint(resp.StatusCode) != "":
		return false, fmt.Errorf("%w: GET %s%s answered %s%s", ErrServer, c.base, path, resp.Status, c.keyHint(resp.StatusCode))
	case resp.StatusCode != http.StatusOK:
		c.saw(path, resp.Status)
	case json.Unmarshal(data, out) != nil:
		c.saw(path, "200 but not JSON of that shape")
	default:
		c.saw(path, "200 without the fields that API has")
		return true, nil
	}
	return false, nil
}

// saw notes what path answered, for detection's error message.
func (c *client) saw(path, what string) {
	if c.seen != nil {
		c.seen[path] = what
	}
}
