//! The formats models write calls in (`Envelope`), and the one a caller may say its model uses (`Format`).

/// The format a model wrote its calls in, each as its model family's chat template or parser defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// `<tool_call>{"name", "arguments"}</tool_call>`: Hermes 2 Pro, Qwen 2.5 and Qwen 3.
    Hermes,
    /// `<tool_call><function=name><parameter=p>v</parameter></function></tool_call>`: Qwen3-Coder.
    QwenXml,
    /// `{"name", "parameters"}` as the whole answer: Llama 3.1 to 3.3's JSON tool calling.
    LlamaJson,
    /// `<|python_tag|>` then a call or JSON: Llama 3.1's built-in and custom tool calls.
    PythonTag,
    /// `[TOOL_CALLS][{…}]` or `[TOOL_CALLS]name[ARGS]{…}`: Mistral's tokenizers v3 and v11.
    Mistral,
    /// `to=functions.name … <|message|>{…}<|call|>`: gpt-oss's harmony format.
    Harmony,
    /// `[f(a=1), g(b="x")]`: Llama 3.2's and BFCL's pythonic calls.
    Pythonic,
    /// `{"name", "arguments"}` objects in the text, alone or in a list: OpenAI's call shape written out.
    Json,
}

impl Envelope {
    pub const ALL: [Envelope; 8] = [
        Envelope::Hermes,
        Envelope::QwenXml,
        Envelope::LlamaJson,
        Envelope::PythonTag,
        Envelope::Mistral,
        Envelope::Harmony,
        Envelope::Pythonic,
        Envelope::Json,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Envelope::Hermes => "hermes",
            Envelope::QwenXml => "qwen3_coder_xml",
            Envelope::LlamaJson => "llama3_json",
            Envelope::PythonTag => "llama3_python_tag",
            Envelope::Mistral => "mistral",
            Envelope::Harmony => "harmony",
            Envelope::Pythonic => "pythonic",
            Envelope::Json => "json",
        }
    }

    /// Whether the format marks its calls with tags of its own, so that nothing outside them is read.
    pub fn tagged(self) -> bool {
        !matches!(self, Envelope::LlamaJson | Envelope::Pythonic | Envelope::Json)
    }
}

/// The format a caller says its model writes calls in: `Auto` reads every envelope; a named one reads only its
/// own (a tagged format only its tags, so a call written any other way is text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Auto,
    Only(Envelope),
}

impl Format {
    /// The names a request may give, as `name()` spells them, and `auto` (or nothing) for every envelope.
    pub fn parse(name: &str) -> Result<Format, String> {
        let name = name.trim();
        if name.is_empty() || name.eq_ignore_ascii_case("auto") {
            return Ok(Format::Auto);
        }
        let wanted = name.to_ascii_lowercase().replace('-', "_");
        let alias = match wanted.as_str() {
            "qwen" | "qwen2.5" | "qwen3" => Some(Envelope::Hermes),
            "qwen3_coder" | "qwen3_xml" => Some(Envelope::QwenXml),
            "llama3" | "llama" => Some(Envelope::LlamaJson),
            "python_tag" => Some(Envelope::PythonTag),
            "gpt_oss" => Some(Envelope::Harmony),
            _ => None,
        };
        alias.or_else(|| Envelope::ALL.into_iter().find(|e| e.name() == wanted)).map(Format::Only).ok_or_else(|| {
            let known: Vec<_> = Envelope::ALL.iter().map(|e| e.name()).collect();
            format!("unknown format {name:?}: auto, {}", known.join(", "))
        })
    }

    /// The format a chat model's family writes calls in, from the model's name as providers spell it
    /// (`Qwen/Qwen3-8B`, `meta-llama/Llama-3.3-70B-Instruct`, `gpt-oss-20b`); `Auto` for a family not known here.
    pub fn of_model(model: &str) -> Format {
        let model = model.to_ascii_lowercase().replace(['_', ' '], "-");
        // Families documented to write more than one format (Llama 3.2 and 4: JSON in their chat templates, a
        // pythonic list in their model cards; DeepSeek's distills of Qwen and Llama: their own) are read in all.
        const MIXED: [&str; 5] = ["llama-3.2", "llama3.2", "llama-4", "llama4", "deepseek"];
        if MIXED.iter().any(|mark| model.contains(mark)) {
            return Format::Auto;
        }
        // The first family whose mark the name holds: Qwen3-Coder before Qwen.
        const FAMILIES: [(&[&str], Envelope); 5] = [
            (&["qwen3-coder"], Envelope::QwenXml),
            (&["hermes", "qwen", "qwq"], Envelope::Hermes),
            (&["gpt-oss"], Envelope::Harmony),
            (&["mistral", "mixtral", "ministral", "codestral", "devstral", "magistral", "pixtral"], Envelope::Mistral),
            (&["llama-3.1", "llama3.1", "llama-3.3", "llama3.3"], Envelope::LlamaJson),
        ];
        FAMILIES
            .iter()
            .find(|(marks, _)| marks.iter().any(|mark| model.contains(mark)))
            .map_or(Format::Auto, |(_, envelope)| Format::Only(*envelope))
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Only(envelope) => envelope.name(),
        }
    }

    /// Whether calls written in `envelope` are read in this format.
    pub fn reads(self, envelope: Envelope) -> bool {
        match self {
            Format::Auto => true,
            // Hermes and Qwen3-Coder share the `<tool_call>` tag: Qwen's templates write either inside it.
            Format::Only(Envelope::Hermes) => matches!(envelope, Envelope::Hermes | Envelope::QwenXml),
            Format::Only(only) => only == envelope,
        }
    }

    /// Whether the format reads tags (auto reads them first, and plain text only where none is made).
    pub fn reads_tags(self) -> bool {
        match self {
            Format::Auto => true,
            Format::Only(envelope) => envelope.tagged(),
        }
    }

    /// Whether the format reads calls outside tags.
    pub fn reads_plain(self) -> bool {
        match self {
            Format::Auto => true,
            Format::Only(envelope) => !envelope.tagged(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_envelope_is_a_format_by_its_name_and_unknown_names_say_what_is_known() {
        for envelope in Envelope::ALL {
            assert_eq!(Format::parse(envelope.name()), Ok(Format::Only(envelope)));
        }
        assert_eq!(Format::parse(""), Ok(Format::Auto));
        assert_eq!(Format::parse("AUTO"), Ok(Format::Auto));
        assert_eq!(Format::parse("qwen3"), Ok(Format::Only(Envelope::Hermes)));
        let unknown = Format::parse("claude").unwrap_err();
        assert!(unknown.contains("hermes") && unknown.contains("auto"), "{unknown}");
    }

    #[test]
    fn a_models_family_names_its_format_and_an_unknown_one_reads_every_envelope() {
        let cases = [
            ("Qwen/Qwen3-Coder-30B-A3B-Instruct", Format::Only(Envelope::QwenXml)),
            ("Qwen/Qwen2.5-7B-Instruct", Format::Only(Envelope::Hermes)),
            ("NousResearch/Hermes-3-Llama-3.1-8B", Format::Only(Envelope::Hermes)),
            ("openai/gpt-oss-20b", Format::Only(Envelope::Harmony)),
            ("mistral-large-2411", Format::Only(Envelope::Mistral)),
            ("meta-llama/Llama-3.2-3B-Instruct", Format::Auto),
            ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", Format::Auto),
            ("llama3.1:8b", Format::Only(Envelope::LlamaJson)),
            ("gpt-4o-2024-08-06", Format::Auto),
            ("", Format::Auto),
        ];
        for (model, format) in cases {
            assert_eq!(Format::of_model(model), format, "{model}");
        }
    }
}
