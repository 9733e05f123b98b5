//! Counting a chat as OpenAI's Chat Completions API takes it: a JSON array
//! of messages, or a whole request body (`{"model", "messages", "tools",
//! …}`), with text, images, tool definitions, tool calls and tool replies.
//!
//! The rules are OpenAI's where OpenAI documents them, and estimates
//! otherwise; [`ChatCount`] keeps the parts apart and says what was assumed:
//!
//! - **Messages** (the cookbook's `num_tokens_from_messages`): 3 tokens per
//!   message, the tokens of each of its text fields (`role`, `content`,
//!   `name` + 1, `tool_call_id`), and 3 that prime the reply.
//! - **Tool calls** of an assistant message: the tokens of each call's
//!   function name and arguments (OpenAI documents no per-call overhead).
//! - **Tool definitions** (the cookbook's `num_tokens_for_tools`): per
//!   function 7 (10 for cl100k models), its `name:description`, 3 for the
//!   properties, per property 3 and `name:type:description`, an enum −3 and
//!   3 + the tokens of each value; 12 at the end.
//! - **Images** (OpenAI's vision pricing): `detail: "low"` costs the base;
//!   `high` and `auto` scale the image to fit 2048 × 2048, then its short
//!   side to 768, and add a tile price per 512-pixel tile: 85 + 170 per tile
//!   for the gpt-4o family, 2,833 + 5,667 for gpt-4o-mini. The size is read
//!   from a `data:` URL's PNG or JPEG header; an image whose size is unknown
//!   is counted as 1024 × 1024 with a warning, never as 0.
//!
//! ```
//! use modelbin_tokenize::Tokenizer;
//! use modelbin_tokenize::cost::chat::{Chat, ChatRules};
//!
//! let chat = Chat::parse(r#"{"model": "gpt-4o", "messages": [
//!     {"role": "user", "content": "Weather in Paris?"},
//!     {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
//!      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
//!     {"role": "tool", "tool_call_id": "call_1", "content": "18 C, sunny"}]}"#).unwrap();
//! let tokenizer = Tokenizer::embedded("o200k_base").unwrap();
//! let count = chat.count(tokenizer, &ChatRules::for_model("gpt-4o")).unwrap();
//! assert!(count.tool_calls > 0 && count.warnings.is_empty());
//! assert_eq!(count.total(), count.messages + count.tool_calls + count.tools + count.images);
//! ```

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::{Error, Result, Tokenizer};

/// Tokens every message costs beyond its fields, and a name adds.
const TOKENS_PER_MESSAGE: usize = 3;
const TOKENS_PER_NAME: usize = 1;
/// Tokens that prime the assistant's reply.
const REPLY_PRIMING: usize = 3;

/// The size an image is counted at when its size is unknown.
const ASSUMED_IMAGE_SIDE: u32 = 1024;

/// A chat request: its messages, the tools it offers, and the model it
/// names (a request body names one; a bare array of messages does not).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Chat {
    /// The request's `model`, if it is a request body.
    #[serde(default)]
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// The tools offered (`tools`, or the older `functions`).
    #[serde(default, alias = "functions")]
    pub tools: Vec<ToolDefinition>,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text, or content parts; `null` for an assistant message that
    /// only calls tools.
    #[serde(default)]
    pub content: Option<Content>,
    /// An optional participant name.
    #[serde(default)]
    pub name: Option<String>,
    /// The tool calls of an assistant message.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// The call a `tool` message answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// Message content.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content parts.
    Parts(Vec<ContentPart>),
}

/// One content part: text or an image (other kinds are counted as their
/// text, if any, with a warning).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ContentPart {
    /// The part's type (`text`, `image_url`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// The text of a `text` part.
    #[serde(default)]
    pub text: Option<String>,
    /// The image of an `image_url` part.
    #[serde(default)]
    pub image_url: Option<ImageUrl>,
}

/// An image part's image.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ImageUrl {
    /// An `https:` URL or a `data:image/…;base64,` URL.
    pub url: String,
    /// `low`, `high` or `auto` (the default).
    #[serde(default)]
    pub detail: Option<String>,
}

/// A call an assistant message makes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolCall {
    /// The call's function.
    pub function: FunctionCall,
}

/// A called function: its name and its arguments (a JSON text).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FunctionCall {
    /// The function's name.
    pub name: String,
    /// The arguments, as the model wrote them.
    #[serde(default)]
    pub arguments: String,
}

/// A tool the request offers: `{"type": "function", "function": {…}}`, or
/// the function alone (the older `functions` list).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ToolDefinition {
    /// `{"type": "function", "function": {…}}`.
    Tool {
        /// The function.
        function: FunctionDefinition,
    },
    /// A bare function.
    Function(FunctionDefinition),
}

/// A function a tool offers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FunctionDefinition {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its parameters, a JSON Schema object.
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
}

/// The per-model constants of the rules: tool-definition overheads and
/// image prices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChatRules {
    /// Tokens per function definition.
    pub function_start: i64,
    /// Tokens that open a function's properties.
    pub properties_start: i64,
    /// Tokens per property.
    pub property: i64,
    /// Tokens an enum adds (negative in the cookbook).
    pub enum_start: i64,
    /// Tokens per enum value.
    pub enum_item: i64,
    /// Tokens that close the tool definitions.
    pub functions_end: i64,
    /// An image's base tokens.
    pub image_base: usize,
    /// Tokens per 512-pixel tile of a high-detail image.
    pub image_tile: usize,
}

impl ChatRules {
    /// The rules for `model`: gpt-4o's for o200k models, gpt-4's for older
    /// ones (the two the cookbook documents), and gpt-4o-mini's image prices
    /// for gpt-4o-mini.
    pub fn for_model(model: &str) -> ChatRules {
        let older = super::encoding_for_model(model).is_ok_and(|e| e != "o200k_base");
        let mini = model.starts_with("gpt-4o-mini");
        ChatRules {
            function_start: if older { 10 } else { 7 },
            properties_start: 3,
            property: 3,
            enum_start: -3,
            enum_item: 3,
            functions_end: 12,
            image_base: if mini { 2833 } else { 85 },
            image_tile: if mini { 5667 } else { 170 },
        }
    }
}

/// A chat's tokens, by part, and what was assumed to count them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ChatCount {
    /// The messages' text with the per-message overhead and reply priming.
    pub messages: usize,
    /// The assistant messages' tool calls.
    pub tool_calls: usize,
    /// The tool definitions.
    pub tools: usize,
    /// The images.
    pub images: usize,
    /// What was assumed, one sentence each (an image of unknown size, a
    /// content part of an unknown kind).
    pub warnings: Vec<String>,
}

impl ChatCount {
    /// All the chat's input tokens.
    pub fn total(&self) -> usize {
        self.messages + self.tool_calls + self.tools + self.images
    }
}

impl Chat {
    /// Reads a chat: a JSON array of messages, or a request body with
    /// `messages` (and `model`, `tools`; other keys are ignored).
    pub fn parse(json: &str) -> Result<Chat> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| Error::BadChat(e.to_string()))?;
        let chat = if value.is_array() {
            serde_json::from_value(value).map(|messages| Chat {
                messages,
                ..Chat::default()
            })
        } else {
            serde_json::from_value(value)
        };
        chat.map_err(|e| Error::BadChat(e.to_string()))
    }

    /// The chat's tokens by `rules`, with `tokenizer`'s counts of its text.
    pub fn count(&self, tokenizer: &Tokenizer, rules: &ChatRules) -> Result<ChatCount> {
        let mut count = ChatCount::default();
        let tokens = |text: &str| tokenizer.count(text);
        for (index, message) in self.messages.iter().enumerate() {
            let mut text = TOKENS_PER_MESSAGE + tokens(&message.role)?;
            if let Some(name) = &message.name {
                text += tokens(name)? + TOKENS_PER_NAME;
            }
            if let Some(id) = &message.tool_call_id {
                text += tokens(id)?;
            }
            match &message.content {
                None => {}
                Some(Content::Text(content)) => text += tokens(content)?,
                Some(Content::Parts(parts)) => {
                    for part in parts {
                        if let Some(image) = &part.image_url {
                            count.images += image_tokens(image, rules, index, &mut count.warnings);
                        } else if let Some(content) = &part.text {
                            text += tokens(content)?;
                        }
                        if !matches!(part.kind.as_str(), "text" | "image_url") {
                            count.warnings.push(format!(
                                "message {}: a {:?} part is not counted but for its text",
                                index + 1,
                                part.kind
                            ));
                        }
                    }
                }
            }
            count.messages += text;
            for call in &message.tool_calls {
                count.tool_calls +=
                    tokens(&call.function.name)? + tokens(&call.function.arguments)?;
            }
        }
        count.messages += REPLY_PRIMING;
        count.tools = self.tool_tokens(tokenizer, rules)?;
        Ok(count)
    }

    /// The tool definitions' tokens (the cookbook's `num_tokens_for_tools`).
    fn tool_tokens(&self, tokenizer: &Tokenizer, rules: &ChatRules) -> Result<usize> {
        if self.tools.is_empty() {
            return Ok(0);
        }
        let tokens = |text: &str| tokenizer.count(text).map(|n| n as i64);
        let mut total = 0i64;
        for tool in &self.tools {
            let function = match tool {
                ToolDefinition::Tool { function } | ToolDefinition::Function(function) => function,
            };
            total += rules.function_start;
            let description = function.description.trim_end_matches('.');
            total += tokens(&format!("{}:{description}", function.name))?;
            let properties = function
                .parameters
                .as_ref()
                .and_then(|p| p.get("properties"))
                .and_then(|p| p.as_object());
            let Some(properties) = properties.filter(|p| !p.is_empty()) else {
                continue;
            };
            total += rules.properties_start;
            for (name, property) in properties {
                total += rules.property;
                let field = |key: &str| property.get(key).and_then(|v| v.as_str()).unwrap_or("");
                if let Some(values) = property.get("enum").and_then(|v| v.as_array()) {
                    total += rules.enum_start;
                    for value in values {
                        total += rules.enum_item;
                        let value = value
                            .as_str()
                            .map_or_else(|| value.to_string(), str::to_owned);
                        total += tokens(&value)?;
                    }
                }
                let description = field("description").trim_end_matches('.');
                total += tokens(&format!("{name}:{}:{description}", field("type")))?;
            }
        }
        total += rules.functions_end;
        Ok(total.max(0) as usize)
    }
}

/// An image part's tokens by OpenAI's tile rule; an unknown size is
/// counted as [`ASSUMED_IMAGE_SIDE`] square, with a warning.
fn image_tokens(
    image: &ImageUrl,
    rules: &ChatRules,
    index: usize,
    warnings: &mut Vec<String>,
) -> usize {
    let detail = image.detail.as_deref().unwrap_or("auto");
    if detail == "low" {
        return rules.image_base;
    }
    let (width, height) = match data_url_size(&image.url) {
        Some(size) => size,
        None => {
            let side = ASSUMED_IMAGE_SIDE;
            let tokens = high_detail_tokens(side, side, rules);
            warnings.push(format!(
                "message {}: the size of image {} is unknown (only a data: URL's PNG or JPEG is read); counted as {side}x{side} at detail {detail:?}: {tokens} tokens",
                index + 1,
                shortened(&image.url)
            ));
            return tokens;
        }
    };
    high_detail_tokens(width, height, rules)
}

/// A high-detail image's tokens: fit in 2048 × 2048, short side to 768
/// (images are never enlarged), then the base and a price per 512-pixel
/// tile.
fn high_detail_tokens(width: u32, height: u32, rules: &ChatRules) -> usize {
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let fit = (2048.0 / w.max(h)).min(1.0);
    (w, h) = (w * fit, h * fit);
    let short = (768.0 / w.min(h)).min(1.0);
    (w, h) = ((w * short).floor(), (h * short).floor());
    let tiles = (w / 512.0).ceil() as usize * (h / 512.0).ceil() as usize;
    rules.image_base + rules.image_tile * tiles
}

/// The width and height of a `data:` URL's PNG or JPEG image, from its
/// header.
fn data_url_size(url: &str) -> Option<(u32, u32)> {
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    if !header.ends_with(";base64") {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .ok()?;
    image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .ok()?
        .into_dimensions()
        .ok()
}

/// A URL short enough for a warning.
fn shortened(url: &str) -> String {
    match url.char_indices().nth(60) {
        Some((end, _)) => format!("{}…", &url[..end]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> ChatRules {
        ChatRules::for_model("gpt-4o")
    }

    #[test]
    fn messages_follow_the_cookbook() {
        let t = Tokenizer::embedded("cl100k_base").unwrap();
        let chat = Chat::parse(
            r#"[{"role": "system", "content": "hi"}, {"role": "user", "name": "bob", "content": [{"type": "text", "text": "hello world"}]}]"#,
        )
        .unwrap();
        let count = |text| t.count(text).unwrap();
        let expected = (3 + count("system") + count("hi"))
            + (3 + count("user") + count("hello world") + count("bob") + 1)
            + 3;
        let counted = chat.count(t, &rules()).unwrap();
        assert_eq!((counted.total(), counted.messages), (expected, expected));
    }

    #[test]
    fn images_follow_the_tile_rule() {
        // OpenAI's worked examples: 1024 x 1024 high is 765 tokens; 2048 x
        // 4096 is 1105; low detail is 85 whatever the size.
        let r = rules();
        assert_eq!(high_detail_tokens(1024, 1024, &r), 765);
        assert_eq!(high_detail_tokens(2048, 4096, &r), 1105);
        assert_eq!(high_detail_tokens(512, 512, &r), 255);
        let mini = ChatRules::for_model("gpt-4o-mini");
        assert_eq!(high_detail_tokens(1024, 1024, &mini), 2833 + 4 * 5667);
        let mut warnings = Vec::new();
        let low = ImageUrl {
            url: "https://example.com/cat.png".into(),
            detail: Some("low".into()),
        };
        assert_eq!(image_tokens(&low, &r, 0, &mut warnings), 85);
        assert!(warnings.is_empty());
        let unknown = ImageUrl {
            detail: None,
            ..low
        };
        assert_eq!(image_tokens(&unknown, &r, 0, &mut warnings), 765);
        assert!(warnings[0].contains("counted as 1024x1024"), "{warnings:?}");
    }

    #[test]
    fn a_data_url_gives_the_images_size() {
        let mut png = Vec::new();
        image::RgbImage::new(1500, 600)
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let url = format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&png)
        );
        assert_eq!(data_url_size(&url), Some((1500, 600)));
        // 1500 x 600 -> short side 768 is an enlargement, so it stays: 3 x 2 tiles.
        let image = ImageUrl {
            url,
            detail: Some("high".into()),
        };
        let mut warnings = Vec::new();
        assert_eq!(
            image_tokens(&image, &rules(), 0, &mut warnings),
            85 + 170 * 6
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn tools_follow_the_cookbook() {
        let t = Tokenizer::embedded("o200k_base").unwrap();
        let chat = Chat::parse(
            r#"{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "tools": [
              {"type": "function", "function": {"name": "get_weather", "description": "Get the weather.",
               "parameters": {"type": "object", "properties": {
                 "city": {"type": "string", "description": "The city."},
                 "unit": {"type": "string", "description": "Unit", "enum": ["c", "f"]}}}}}]}"#,
        )
        .unwrap();
        let n = |text: &str| t.count(text).unwrap() as i64;
        // The cookbook's gpt-4o constants.
        let (function, properties, property, enum_start, enum_item, end) = (7, 3, 3, -3, 3, 12);
        let expected = function
            + n("get_weather:Get the weather")
            + properties
            + (property + n("city:string:The city"))
            + (property + enum_start + enum_item + n("c") + enum_item + n("f"))
            + n("unit:string:Unit")
            + end;
        let counted = chat.count(t, &rules()).unwrap();
        assert_eq!(counted.tools as i64, expected);
        assert_eq!(chat.model.as_deref(), Some("gpt-4o"));
    }

    #[test]
    fn tool_calls_and_replies_count_their_text() {
        let t = Tokenizer::embedded("o200k_base").unwrap();
        let chat = Chat::parse(
            r#"[{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                 "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "42"}]"#,
        )
        .unwrap();
        let n = |text: &str| t.count(text).unwrap();
        let counted = chat.count(t, &rules()).unwrap();
        assert_eq!(counted.tool_calls, n("f") + n("{\"x\": 1}"));
        assert_eq!(
            counted.messages,
            (3 + n("assistant")) + (3 + n("tool") + n("c1") + n("42")) + 3
        );
        assert!(matches!(
            Chat::parse("{\"messages\": 3}"),
            Err(Error::BadChat(_))
        ));
    }
}
