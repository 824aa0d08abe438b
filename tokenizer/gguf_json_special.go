package tokenizer

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/llorch/llorch-check/gguf"
	"github.com/llorch/llorch-check/internal/regularfile"
)

// The GGUF key of each special token type gguf-py's SpecialVocab writes.
var specialIDKeys = map[string]string{
	"bos": "tokenizer.ggml.bos_token_id", "eos": "tokenizer.ggml.eos_token_id",
	"unk": "tokenizer.ggml.unknown_token_id", "sep": "tokenizer.ggml.seperator_token_id",
	"pad": "tokenizer.ggml.padding_token_id", "cls": "tokenizer.ggml.cls_token_id",
	"mask": "tokenizer.ggml.mask_token_id", "eot": "tokenizer.ggml.eot_token_id",
	"eom": "tokenizer.ggml.eom_token_id",
}

// specialVocab is gguf-py's SpecialVocab for a tokenizer.json: the
// special token ids, whether BOS and EOS are added, and the chat
// template, in the order it writes them. nVocab bounds the ids when
// bounded (llama.cpp's converter bounds a "llama" vocabulary's).
func specialVocab(dir string, tj *tokenizerJSON, cfg map[string]json.RawMessage, nVocab int, bounded bool) ([]gguf.KV, error) {
	types := []string{"bos", "eos", "unk", "sep", "pad", "cls", "mask"}
	var idOrder, addOrder []string
	ids, add := map[string]int{}, map[string]bool{}
	setID := func(typ string, id int) {
		if _, ok := ids[typ]; ok || id < 0 || bounded && id >= nVocab {
			return
		}
		ids[typ] = id
		idOrder = append(idOrder, typ)
	}
	setAdd := func(typ string, v bool) {
		if _, ok := add[typ]; !ok {
			addOrder = append(addOrder, typ)
		}
		add[typ] = v
	}
	// The tokens tokenizer_config.json names, by content.
	named := map[string]string{}
	for _, typ := range append(types, "eot", "eom") {
		if s, ok := tokenContent(cfg[typ+"_token"]); ok {
			named[typ] = s
		}
	}
	if named["bos"] == "" && named["cls"] != "" && cfg != nil {
		named["bos"] = named["cls"]
	}
	if named["eos"] == "" && named["sep"] != "" && cfg != nil {
		named["eos"] = named["sep"]
	}
	for _, proc := range postProcessors(tj.PostProcessor) {
		switch proc.Type {
		case "RobertaProcessing":
			setAdd("bos", true)
			setAdd("eos", true)
			setAdd("sep", true)
		case "TemplateProcessing":
			single := proc.Single
			if len(single) < 2 {
				continue
			}
			if first := single[0].specialID(); first != "" {
				if cfg == nil {
					named["bos"] = first
				}
				setAdd("bos", first == named["bos"] || first == named["cls"])
			}
			if last := single[len(single)-1].specialID(); last != "" {
				if cfg == nil {
					named["eos"] = last
				} else if last != named["eos"] {
					// The template ends with another token than
					// tokenizer_config's EOS: that one becomes EOT (or
					// EOM), the template's the EOS.
					extra := "eot"
					if len(types) > 7 {
						extra = "eom"
					}
					if len(types) < 9 {
						types = append(types, extra)
						named[extra] = named["eos"]
					}
					named["eos"] = last
				}
				setAdd("eos", last == named["eos"])
			}
		}
	}
	var kv []gguf.KV
	var template *gguf.KV
	if cfg != nil {
		var err error
		if template, err = chatTemplate(dir, cfg); err != nil {
			return nil, err
		}
		for _, typ := range types {
			var b bool
			if raw, ok := cfg["add_"+typ+"_token"]; ok && json.Unmarshal(raw, &b) == nil {
				setAdd(typ, b)
			}
			content, ok := named[typ]
			if !ok {
				continue
			}
			for _, at := range tj.AddedTokens {
				if at.Content == content {
					setID(typ, at.ID)
					break
				}
			}
		}
	}
	config, err := readConfigIDs(dir)
	if err != nil {
		return nil, err
	}
	for _, typ := range types {
		if id, ok := config[typ]; ok {
			setID(typ, id)
		}
	}
	for _, typ := range idOrder {
		kv = append(kv, gguf.Uint32KV(specialIDKeys[typ], uint32(ids[typ])))
	}
	for _, typ := range addOrder {
		if typ == "bos" || typ == "eos" || typ == "sep" { // the keys gguf-py has
			kv = append(kv, gguf.KV{Key: "tokenizer.ggml.add_" + typ + "_token", Value: gguf.Value{Type: gguf.TypeBool, V: add[typ]}})
		}
	}
	if template != nil {
		kv = append(kv, *template)
	}
	return kv, nil
}

// tokenContent reads a tokenizer_config.json token: a string, or an
// object whose content is one.
func tokenContent(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var obj struct{ Content *string }
	if json.Unmarshal(raw, &obj) == nil && obj.Content != nil {
		return *obj.Content, true
	}
	return "", false
}

// templatePiece is one item of a TemplateProcessing template.
type templatePiece struct {
	SpecialToken *struct{ ID string } `json:"SpecialToken"`
}

func (p templatePiece) specialID() string {
	if p.SpecialToken == nil {
		return ""
	}
	return p.SpecialToken.ID
}

type postProcessor struct {
	Type   string
	Single []templatePiece
}

// postProcessors lists the post-processor, or a Sequence's processors.
func postProcessors(raw json.RawMessage) []postProcessor {
	var p struct {
		postProcessor
		Processors []postProcessor
	}
	if len(raw) == 0 || json.Unmarshal(raw, &p) != nil {
		return nil
	}
	if p.Type == "Sequence" {
		return p.Processors
	}
	return []postProcessor{p.postProcessor}
}

// chatTemplate is tokenizer.chat_template: tokenizer_config.json's, else
// chat_template.jinja's, else chat_template.json's. A list of named
// templates gives its "default" (the others are not converted).
func chatTemplate(dir string, cfg map[string]json.RawMessage) (*gguf.KV, error) {
	kv := func(s string) *gguf.KV { k := gguf.StringKV("tokenizer.chat_template", s); return &k }
	if raw, ok := cfg["chat_template"]; ok && string(raw) != "null" {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return kv(s), nil
		}
		var named []struct{ Name, Template string }
		if err := json.Unmarshal(raw, &named); err != nil {
			return nil, fmt.Errorf("%w: %s: chat_template: want a string or a list of {name, template}", ErrFormat, filepath.Join(dir, "tokenizer_config.json"))
		}
		for _, t := range named {
			if t.Name == "default" {
				return kv(t.Template), nil
			}
		}
		return nil, nil
	}
	if data, err := regularfile.ReadFileMax(filepath.Join(dir, "chat_template.jinja"), regularfile.MaxChatTemplate); err == nil {
		return kv(string(data)), nil
	}
	var alt struct {
		ChatTemplate *string `json:"chat_template"`
	}
	if data, err := regularfile.ReadFileMax(filepath.Join(dir, "chat_template.json"), regularfile.MaxChatTemplate); err == nil && json.Unmarshal(data, &alt) == nil && alt.ChatTemplate != nil {
		return kv(*alt.ChatTemplate), nil
	}
	return nil, nil
}

// readConfigIDs reads config.json's {type}_token_id integers (a list, as
// Llama 3.1's eos_token_id, is not one, as in gguf-py).
func readConfigIDs(dir string) (map[string]int, error) {
	cfg, err := readJSONObject(filepath.Join(dir, "config.json"), regularfile.MaxConfigJSON)
	if cfg == nil || err != nil {
		return nil, err
	}
	out := map[string]int{}
	for typ := range specialIDKeys {
		var id int
		if raw, ok := cfg[typ+"_token_id"]; ok && json.Unmarshal(raw, &id) == nil {
			out[typ] = id
		}
	}
	return out, nil
}
