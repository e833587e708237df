//! A small reader for EDN (extensible data notation, github.com/edn-format/edn), enough for
//! Jepsen histories: nil, booleans, integers, floats, strings, characters, keywords, symbols,
//! lists, vectors, sets, maps, tagged values (`#inst "…"`) and discarded forms (`#_ x`).
//! Commas are whitespace and `;` starts a comment, as in Clojure.
//!
//! Malformed input is an [`EdnError`] with a line and column, never a panic; nesting deeper than
//! [`DEPTH_MAX`] is refused so that hostile input cannot overflow the stack.

#[derive(Clone, Debug, PartialEq)]
pub enum Edn {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Char(char),
    /// Without the leading colon.
    Keyword(String),
    Symbol(String),
    List(Vec<Edn>),
    Vector(Vec<Edn>),
    Set(Vec<Edn>),
    /// Pairs in source order.
    Map(Vec<(Edn, Edn)>),
    Tagged(String, Box<Edn>),
}

impl Edn {
    /// The value of keyword `key` in a map.
    pub fn get(&self, key: &str) -> Option<&Edn> {
        let Edn::Map(pairs) = self else { return None };
        pairs.iter().find(|(k, _)| matches!(k, Edn::Keyword(name) if name == key)).map(|(_, value)| value)
    }

    pub fn as_keyword(&self) -> Option<&str> {
        match self {
            Edn::Keyword(name) => Some(name),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Edn::Int(n) => Some(*n),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct EdnError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Deepest nesting accepted.
pub const DEPTH_MAX: usize = 128;

/// Reads one form after another from a text.
pub struct Reader<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    line_start: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a str) -> Self {
        Reader { text, pos: 0, line: 1, line_start: 0, depth: 0 }
    }

    /// The next top-level form and the line it starts on; `None` at the end of the text.
    pub fn next_form(&mut self) -> Result<Option<(usize, Edn)>, EdnError> {
        self.skip_ignored()?;
        if self.pos == self.text.len() {
            return Ok(None);
        }
        let line = self.line;
        Ok(Some((line, self.read_form()?)))
    }

    /// If the next form opens with `open` (e.g. `[`), consumes that character and returns true:
    /// lets a caller stream the elements of a large top-level collection one by one.
    pub fn enter(&mut self, open: char) -> Result<bool, EdnError> {
        self.skip_ignored()?;
        Ok(if self.peek() == Some(open) {
            self.pos += open.len_utf8();
            true
        } else {
            false
        })
    }

    /// Like [`Reader::next_form`] inside a collection entered with [`Reader::enter`]: `None` once
    /// `close` is consumed; the end of the text is an error.
    pub fn next_element(&mut self, close: char) -> Result<Option<(usize, Edn)>, EdnError> {
        self.skip_ignored()?;
        match self.peek() {
            None => Err(self.error(format!("expected `{close}` before the end of the text"))),
            Some(c) if c == close => {
                self.pos += 1;
                Ok(None)
            }
            Some(_) => {
                let line = self.line;
                Ok(Some((line, self.read_form()?)))
            }
        }
    }

    fn error(&self, message: String) -> EdnError {
        EdnError { line: self.line, column: self.text[self.line_start..self.pos].chars().count() + 1, message }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.line_start = self.pos;
        }
        Some(c)
    }

    fn skip_whitespace(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                ';' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                c if c.is_whitespace() || c == ',' => {
                    self.bump();
                }
                _ => return,
            }
        }
    }

    /// Skips whitespace, comments and discarded forms (`#_ form`).
    fn skip_ignored(&mut self) -> Result<(), EdnError> {
        loop {
            self.skip_whitespace();
            if !self.text[self.pos..].starts_with("#_") {
                return Ok(());
            }
            self.pos += 2;
            self.read_form()?;
        }
    }

    fn read_form(&mut self) -> Result<Edn, EdnError> {
        if self.depth == DEPTH_MAX {
            return Err(self.error(format!("nested deeper than {DEPTH_MAX}")));
        }
        self.depth += 1;
        let form = self.read_form_here();
        self.depth -= 1;
        form
    }

    fn read_form_here(&mut self) -> Result<Edn, EdnError> {
        self.skip_ignored()?;
        let Some(c) = self.peek() else {
            return Err(self.error("expected a value, found the end of the text".into()));
        };
        match c {
            '(' | '[' | '{' => self.read_collection(c),
            ')' | ']' | '}' => Err(self.error(format!("unexpected `{c}`"))),
            '"' => self.read_string(),
            '\\' => self.read_char(),
            '#' => self.read_dispatch(),
            ':' => {
                self.bump();
                let name = self.read_token();
                if name.is_empty() {
                    return Err(self.error("empty keyword".into()));
                }
                Ok(Edn::Keyword(name.to_string()))
            }
            _ => {
                let token = self.read_token();
                if token.is_empty() {
                    return Err(self.error(format!("unexpected `{c}`")));
                }
                self.atom(token)
            }
        }
    }

    fn read_collection(&mut self, open: char) -> Result<Edn, EdnError> {
        let close = match open {
            '(' => ')',
            '[' => ']',
            _ => '}',
        };
        self.bump();
        let items = self.read_until(close)?;
        match open {
            '(' => Ok(Edn::List(items)),
            '[' => Ok(Edn::Vector(items)),
            _ => self.pairs(items).map(Edn::Map),
        }
    }

    fn read_until(&mut self, close: char) -> Result<Vec<Edn>, EdnError> {
        let mut items = Vec::new();
        while let Some((_, item)) = self.next_element(close)? {
            items.push(item);
        }
        Ok(items)
    }

    fn pairs(&self, items: Vec<Edn>) -> Result<Vec<(Edn, Edn)>, EdnError> {
        if !items.len().is_multiple_of(2) {
            return Err(self.error("a map needs an even number of forms".into()));
        }
        let mut items = items.into_iter();
        let mut pairs = Vec::with_capacity(items.len() / 2);
        while let (Some(key), Some(value)) = (items.next(), items.next()) {
            pairs.push((key, value));
        }
        Ok(pairs)
    }

    fn read_dispatch(&mut self) -> Result<Edn, EdnError> {
        self.bump();
        match self.peek() {
            Some('{') => {
                self.bump();
                Ok(Edn::Set(self.read_until('}')?))
            }
            _ => {
                let tag = self.read_token().to_string();
                if tag.is_empty() {
                    return Err(self.error("`#` must be followed by `{`, `_` or a tag".into()));
                }
                Ok(Edn::Tagged(tag, Box::new(self.read_form()?)))
            }
        }
    }

    fn read_string(&mut self) -> Result<Edn, EdnError> {
        self.bump();
        let mut out = String::new();
        loop {
            match self.bump() {
                None => return Err(self.error("unterminated string".into())),
                Some('"') => return Ok(Edn::Str(out)),
                Some('\\') => out.push(self.read_escape()?),
                Some(c) => out.push(c),
            }
        }
    }

    fn read_escape(&mut self) -> Result<char, EdnError> {
        match self.bump() {
            Some('n') => Ok('\n'),
            Some('t') => Ok('\t'),
            Some('r') => Ok('\r'),
            Some('b') => Ok('\u{8}'),
            Some('f') => Ok('\u{c}'),
            Some(c @ ('"' | '\\' | '/')) => Ok(c),
            Some('u') => {
                let end = (self.pos + 4).min(self.text.len());
                let hex = self.text.get(self.pos..end).unwrap_or("");
                let code = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
                let Some(c) = code.filter(|_| hex.len() == 4) else {
                    return Err(self.error("bad \\u escape".into()));
                };
                self.pos = end;
                Ok(c)
            }
            other => Err(self.error(format!("bad escape {other:?}"))),
        }
    }

    fn read_char(&mut self) -> Result<Edn, EdnError> {
        self.bump();
        let Some(first) = self.bump() else {
            return Err(self.error("`\\` at the end of the text".into()));
        };
        let rest = self.read_token();
        let name = format!("{first}{rest}");
        let c = match name.as_str() {
            "newline" => '\n',
            "space" => ' ',
            "tab" => '\t',
            "return" => '\r',
            _ if rest.is_empty() => first,
            _ if first == 'u' && rest.len() == 4 => u32::from_str_radix(rest, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| self.error(format!("bad character \\{name}")))?,
            _ => return Err(self.error(format!("unknown character \\{name}"))),
        };
        Ok(Edn::Char(c))
    }

    /// The run of characters up to whitespace, a comma, a delimiter or a comment.
    fn read_token(&mut self) -> &'a str {
        let start = self.pos;
        let rest = &self.text[start..];
        let len = rest.find(|c: char| c.is_whitespace() || ",()[]{}\";".contains(c)).unwrap_or(rest.len());
        self.pos += len;
        &self.text[start..start + len]
    }

    fn atom(&self, token: &str) -> Result<Edn, EdnError> {
        let numeric = token.starts_with(|c: char| c.is_ascii_digit())
            || (token.len() > 1
                && token.starts_with(['+', '-'])
                && token[1..].starts_with(|c: char| c.is_ascii_digit()));
        if numeric {
            return self.number(token);
        }
        Ok(match token {
            "nil" => Edn::Nil,
            "true" => Edn::Bool(true),
            "false" => Edn::Bool(false),
            _ => Edn::Symbol(token.to_string()),
        })
    }

    fn number(&self, token: &str) -> Result<Edn, EdnError> {
        let bad = || self.error(format!("invalid number `{}`", super::cut(token)));
        if token.contains(['.', 'e', 'E']) || token.ends_with('M') {
            let digits = token.strip_suffix('M').unwrap_or(token);
            return digits.parse().map(Edn::Float).map_err(|_| bad());
        }
        let digits = token.strip_suffix('N').unwrap_or(token);
        digits.parse().map(Edn::Int).map_err(|_| bad())
    }
}

/// Parses a text that holds exactly one form.
pub fn parse_one(text: &str) -> Result<Edn, EdnError> {
    let mut reader = Reader::new(text);
    let Some((_, form)) = reader.next_form()? else {
        return Err(reader.error("expected a value, found nothing".into()));
    };
    if reader.next_form()?.is_some() {
        return Err(reader.error("more than one value".into()));
    }
    Ok(form)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kw(name: &str) -> Edn {
        Edn::Keyword(name.into())
    }

    #[test]
    fn reads_a_jepsen_operation() {
        let form =
            parse_one(r#"{:type :ok, :f :cas, :value [1 -2], :process 3, :time 12345, :error nil, :note "a \"b\""}"#)
                .unwrap();
        assert_eq!(form.get("type"), Some(&kw("ok")));
        assert_eq!(form.get("value"), Some(&Edn::Vector(vec![Edn::Int(1), Edn::Int(-2)])));
        assert_eq!(form.get("process").and_then(Edn::as_int), Some(3));
        assert_eq!(form.get("error"), Some(&Edn::Nil));
        assert_eq!(form.get("note"), Some(&Edn::Str("a \"b\"".into())));
        assert_eq!(form.get("missing"), None);
    }

    #[test]
    fn reads_every_kind_of_value() {
        let cases: Vec<(&str, Edn)> = vec![
            ("nil", Edn::Nil),
            ("true", Edn::Bool(true)),
            ("false", Edn::Bool(false)),
            ("42", Edn::Int(42)),
            ("+7", Edn::Int(7)),
            ("-0", Edn::Int(0)),
            ("12N", Edn::Int(12)),
            ("1.5", Edn::Float(1.5)),
            ("-2e3", Edn::Float(-2000.0)),
            ("\"x\\ny\\u00e9\"", Edn::Str("x\ny\u{e9}".into())),
            ("\\a", Edn::Char('a')),
            ("\\newline", Edn::Char('\n')),
            (":timed-out", kw("timed-out")),
            ("jepsen.util/foo", Edn::Symbol("jepsen.util/foo".into())),
            ("-", Edn::Symbol("-".into())),
            ("(1 2)", Edn::List(vec![Edn::Int(1), Edn::Int(2)])),
            ("#{:a}", Edn::Set(vec![kw("a")])),
            ("[1 #_ 2 3]", Edn::Vector(vec![Edn::Int(1), Edn::Int(3)])),
            ("[1 #_ [2]]", Edn::Vector(vec![Edn::Int(1)])),
            ("#_ 1 2", Edn::Int(2)),
            ("#inst \"2015-01-01\"", Edn::Tagged("inst".into(), Box::new(Edn::Str("2015-01-01".into())))),
            ("{} ; comment", Edn::Map(vec![])),
            ("[,1,]", Edn::Vector(vec![Edn::Int(1)])),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_one(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn malformed_input_is_an_error_with_a_position() {
        let cases = [
            ("{:a}", 1, "even number"),
            ("[1 2", 1, "expected `]`"),
            ("\n  )", 2, "unexpected `)`"),
            ("\"abc", 1, "unterminated string"),
            ("99999999999999999999", 1, "invalid number"),
            ("1 2", 1, "more than one value"),
            ("", 1, "found nothing"),
            ("#", 1, "`#` must be followed"),
            (":", 1, "empty keyword"),
            ("\"\\q\"", 1, "bad escape"),
        ];
        for (text, line, message) in cases {
            let error = parse_one(text).unwrap_err();
            assert_eq!(error.line, line, "{text}: {error}");
            assert!(error.message.contains(message), "{text}: {error}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        for text in ["[".repeat(100_000), "#t ".repeat(100_000), "#_ ".repeat(100_000)] {
            assert!(parse_one(&text).unwrap_err().message.contains("nested deeper"));
        }
    }

    #[test]
    fn streams_the_elements_of_a_top_level_vector_with_their_lines() {
        let mut reader = Reader::new("[{:a 1}\n {:a 2}]");
        assert!(reader.enter('[').unwrap());
        assert_eq!(reader.next_element(']').unwrap().unwrap().0, 1);
        assert_eq!(reader.next_element(']').unwrap().unwrap().0, 2);
        assert_eq!(reader.next_element(']').unwrap(), None);
        assert_eq!(reader.next_form().unwrap(), None);
    }
}
