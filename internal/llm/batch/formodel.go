package batch

import (
	"strings"

	"github.com/impactbench/impactbench/internal/config"
	"github.com/impactbench/impactbench/internal/llm"
	"github.com/impactbench/impactbench/internal/llm/provider"
)

// ForModel builds the batch provider for a model of config.yaml, with the
// same base URL, wire model name, request defaults and price as the
// real-time client provider.New builds for it (opts.HTTP, Prices, Pricing
// and Role are used; the rest of provider.Options concerns real-time calls).
// Sources openai and anthropic have batch APIs here; any other source is a
// *llm.Error of KindConfig: "batch not supported for source X".
func ForModel(m config.ModelConfig, opts provider.Options) (Provider, error) {
	src := strings.ToLower(strings.TrimSpace(m.Source))
	if src == "" {
		src = "openai"
	}
	role := opts.Role
	if role == "" {
		role = "model " + m.Model
	}
	if src != "openai" && src != "anthropic" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: src, Model: m.Model,
			Message: "batch not supported for source " + src,
			Hint:    "remove batch: true from " + role + " (batch APIs are used for sources openai and anthropic)"}
	}
	if strings.TrimSpace(m.Model) == "" {
		return nil, &llm.Error{Kind: llm.KindConfig, Provider: src, Message: "model is empty", Hint: "set model: for " + role}
	}
	baseURL := strings.TrimSpace(m.BaseURL)
	if baseURL == "" {
		baseURL = provider.DefaultBaseURL(src)
	}
	keyEnv := map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[src]
	keyField := "apikey of " + role + " (usually ${" + keyEnv + "})"
	if src == "anthropic" || baseURL == provider.DefaultBaseURL(src) {
		if strings.TrimSpace(m.APIKey) == "" {
			return nil, &llm.Error{Kind: llm.KindConfig, Provider: src, Model: m.Model,
				Message: "API key is empty", Hint: "set " + keyField + " in config.yaml, and make sure the variable is set"}
		}
	}
	prices := opts.Prices
	if prices == nil {
		prices = llm.DefaultPrices()
	}
	if len(opts.Pricing) > 0 {
		prices = prices.WithOverrides(opts.Pricing)
	}
	price, known := prices.Price(m.Model, m.Pricing)
	model := provider.WireModel(src, m.Model)
	var (
		p   Provider
		err error
	)
	switch src {
	case "anthropic":
		p, err = NewAnthropic(AnthropicConfig{
			Provider: src, APIKey: m.APIKey, BaseURL: baseURL, Model: model,
			ExtraHeaders: m.ExtraHeaders, HTTPClient: opts.HTTP,
			Temperature: m.Temperature, MaxTokens: m.MaxTokens, KeyField: keyField,
			CacheMinTokens: m.CacheMinTokens, Price: price, PriceKnown: known,
		})
	default:
		p, err = NewOpenAI(OpenAIConfig{
			Provider: src, APIKey: m.APIKey, BaseURL: baseURL, Model: model,
			ExtraHeaders: m.ExtraHeaders, HTTPClient: opts.HTTP,
			Temperature: m.Temperature, MaxTokens: m.MaxTokens, KeyField: keyField,
			Price: price, PriceKnown: known,
		})
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}
