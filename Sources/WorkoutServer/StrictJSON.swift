/// Checks a JSON request body in one pass before it is decoded: strict RFC 8259 syntax (no trailing commas, no
/// comments, nothing after the value), no key twice in one object, no field the body's shape does not know, at
/// most `maximumDepth` levels of nesting.
///
/// Foundation's `JSONDecoder` accepts trailing commas and takes the first of two equal keys (`{"seq": 1,
/// "seq": 2}` was batch 1), and knows nothing of unknown fields; this scan refuses all three with a 400 naming
/// the place. It builds nothing (no tree of values): a batch is scanned once here and decoded once by the decoder.
struct StrictJSON {
    /// The deepest nesting of objects and arrays a body may have (bodies of this API need 4).
    static let maximumDepth = 32

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private let what: String
    /// Where the scan is (keys and indexes), for messages.
    private var path: [PathPart] = []

    private enum PathPart {
        case key(String)
        case index(Int)
    }

    private init(bytes: UnsafeBufferPointer<UInt8>, what: String) {
        self.bytes = bytes
        self.what = what
    }

    /// Checks `bytes` (a body of `what`) against `shape`; the first problem is a 400.
    static func check(_ bytes: [UInt8], shape: WireShape, what: String) throws(APIError) {
        let result: APIError? = bytes.withUnsafeBufferPointer { buffer in
            var scanner = StrictJSON(bytes: buffer, what: what)
            do throws(APIError) {
                scanner.skipSpace()
                try scanner.value(shape, depth: 0)
                scanner.skipSpace()
                guard scanner.index == buffer.count else { throw scanner.syntax("more after the JSON value") }
                return nil
            } catch {
                return error
            }
        }
        if let result { throw result }
    }

    // MARK: grammar

    private mutating func value(_ shape: WireShape?, depth: Int) throws(APIError) {
        guard index < bytes.count else { throw syntax("the body ends where a value should be") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            guard depth < Self.maximumDepth else { throw tooDeep() }
            if case .some(.fields(let fields)) = shape { try object(fields, depth: depth + 1) } else { try object(nil, depth: depth + 1) }
        case UInt8(ascii: "["):
            guard depth < Self.maximumDepth else { throw tooDeep() }
            if case .some(.array(let element)) = shape { try array(element, depth: depth + 1) } else { try array(nil, depth: depth + 1) }
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
        default: throw syntax("'\(character(at: index))' cannot begin a value")
        }
    }

    /// An object; `fields`: the fields its shape allows (nil: any, for a value the decoder will refuse).
    private mutating func object(_ fields: WireShape.Fields?, depth: Int) throws(APIError) {
        index += 1  // {
        skipSpace()
        if peek(UInt8(ascii: "}")) {
            index += 1
            return
        }
        var seenFields: UInt64 = 0  // known fields by their index (a shape has fewer than 64)
        var seenKeys: [String] = []  // other keys (objects the decoder will refuse anyway)
        while true {
            guard peek(UInt8(ascii: "\"")) else {
                throw syntax(seenFields == 0 && seenKeys.isEmpty ? "an object's key must be a string" : "a comma before '}' (trailing commas are not JSON)")
            }
            let key = try keyString()
            if let fields {
                guard let field = fields.index[key] else { throw unknownField(key, fields) }
                let bit: UInt64 = 1 << UInt64(field)
                guard seenFields & bit == 0 else { throw duplicate(key) }
                seenFields |= bit
                skipSpace()
                try expect(UInt8(ascii: ":"), "':' after a key")
                skipSpace()
                path.append(.key(key))
                try value(fields.shapes[field], depth: depth)
                path.removeLast()
            } else {
                guard !seenKeys.contains(key) else { throw duplicate(key) }
                seenKeys.append(key)
                skipSpace()
                try expect(UInt8(ascii: ":"), "':' after a key")
                skipSpace()
                path.append(.key(key))
                try value(nil, depth: depth)
                path.removeLast()
            }
            skipSpace()
            guard index < bytes.count else { throw syntax("the body ends inside an object") }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return
            }
            try expect(UInt8(ascii: ","), "',' or '}' after an object's value")
            skipSpace()
        }
    }

    private mutating func array(_ element: WireShape?, depth: Int) throws(APIError) {
        index += 1  // [
        skipSpace()
        if peek(UInt8(ascii: "]")) {
            index += 1
            return
        }
        var position = 0
        while true {
            guard !peek(UInt8(ascii: "]")) else { throw syntax("a comma before ']' (trailing commas are not JSON)") }
            path.append(.index(position))
            try value(element, depth: depth)
            path.removeLast()
            position += 1
            skipSpace()
            guard index < bytes.count else { throw syntax("the body ends inside an array") }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            }
            try expect(UInt8(ascii: ","), "',' or ']' after an array's element")
            skipSpace()
        }
    }

    /// A string value: skipped, its escapes and characters checked.
    private mutating func string() throws(APIError) {
        index += 1  // "
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return
            }
            if byte == UInt8(ascii: "\\") {
                try escape()
            } else {
                guard byte >= 0x20 else { throw syntax("a control character inside a string (escape it)") }
                index += 1
            }
        }
        throw syntax("the body ends inside a string")
    }

    /// A key: its text (escapes decoded only when it has any).
    private mutating func keyString() throws(APIError) -> String {
        let start = index + 1
        var escaped = false
        index += 1  // "
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if !escaped { return String(decoding: raw, as: UTF8.self) }
                return Self.unescape(raw)
            }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                try escape()
            } else {
                guard byte >= 0x20 else { throw syntax("a control character inside a key (escape it)") }
                index += 1
            }
        }
        throw syntax("the body ends inside a key")
    }

    private mutating func escape() throws(APIError) {
        index += 1  // backslash
        guard index < bytes.count else { throw syntax("the body ends inside an escape") }
        switch bytes[index] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            index += 1
        case UInt8(ascii: "u"):
            guard index + 4 < bytes.count, (1...4).allSatisfy({ Self.hexValue(bytes[index + $0]) != nil }) else {
                throw syntax("\\u must be followed by four hexadecimal digits")
            }
            index += 5
        default:
            throw syntax("'\\\(character(at: index))' is not a JSON escape")
        }
    }

    private mutating func number() throws(APIError) {
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, Self.isDigit(bytes[index]) else { throw syntax("a number needs a digit after '-'") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            guard index >= bytes.count || !Self.isDigit(bytes[index]) else { throw syntax("a number cannot have a leading zero") }
        } else {
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if peek(UInt8(ascii: ".")) {
            index += 1
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw syntax("a number needs a digit after '.'") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            index += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { index += 1 }
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw syntax("a number needs a digit in its exponent") }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
    }

    private mutating func literal(_ word: StaticString) throws(APIError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count,
            (0..<count).allSatisfy({ bytes[index + $0] == word.utf8Start[$0] })
        else { throw syntax("'\(character(at: index))' cannot begin a value") }
        index += count
    }

    // MARK: helpers

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private func peek(_ byte: UInt8) -> Bool { index < bytes.count && bytes[index] == byte }

    private mutating func expect(_ byte: UInt8, _ what: String) throws(APIError) {
        guard peek(byte) else { throw syntax("expected \(what)") }
        index += 1
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x30...0x39: UInt32(byte - 0x30)
        case 0x41...0x46: UInt32(byte - 0x41 + 10)
        case 0x61...0x66: UInt32(byte - 0x61 + 10)
        default: nil
        }
    }

    /// A key's text with its escapes decoded (already checked well formed); a lone surrogate becomes U+FFFD.
    private static func unescape(_ raw: UnsafeBufferPointer<UInt8>) -> String {
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        func flush() {
            if !utf8.isEmpty {
                scalars.append(contentsOf: String(decoding: utf8, as: UTF8.self).unicodeScalars)
                utf8.removeAll()
            }
        }
        var position = 0
        var pendingHigh: UInt32?
        while position < raw.count {
            guard raw[position] == UInt8(ascii: "\\"), position + 1 < raw.count else {
                utf8.append(raw[position])
                position += 1
                continue
            }
            flush()
            let kind = raw[position + 1]
            position += 2
            var scalar: UInt32
            switch kind {
            case UInt8(ascii: "b"): scalar = 0x08
            case UInt8(ascii: "f"): scalar = 0x0C
            case UInt8(ascii: "n"): scalar = 0x0A
            case UInt8(ascii: "r"): scalar = 0x0D
            case UInt8(ascii: "t"): scalar = 0x09
            case UInt8(ascii: "u"):
                scalar = 0
                for offset in 0..<4 where position + offset < raw.count {
                    scalar = scalar * 16 + (hexValue(raw[position + offset]) ?? 0)
                }
                position += 4
            default: scalar = UInt32(kind)
            }
            if (0xD800...0xDBFF).contains(scalar) {
                pendingHigh = scalar
                continue
            }
            if let high = pendingHigh, (0xDC00...0xDFFF).contains(scalar) {
                scalar = 0x10000 + ((high - 0xD800) << 10) + (scalar - 0xDC00)
            }
            pendingHigh = nil
            scalars.append(Unicode.Scalar(scalar) ?? "\u{FFFD}")
        }
        flush()
        return String(scalars)
    }

    private func character(at position: Int) -> String {
        guard position < bytes.count else { return "" }
        let byte = bytes[position]
        return byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : "\\u{\(String(byte, radix: 16))}"
    }

    private var location: String {
        let joined = path.map { part -> String in
            switch part {
            case .key(let key): ".\(key.prefix(64))"
            case .index(let index): "[\(index)]"
            }
        }.joined()
        return String(joined.drop(while: { $0 == "." }))
    }

    private func syntax(_ problem: String) -> APIError {
        let place = location
        return .badRequest(
            "invalid_json",
            "the \(what) is not valid JSON: \(problem) at byte \(index)" + (place.isEmpty ? "" : " (in \(place.prefix(160)))"))
    }

    private func tooDeep() -> APIError {
        .badRequest("invalid_json", "the \(what) is nested deeper than \(Self.maximumDepth) levels; no body of this API is")
    }

    private func duplicate(_ key: String) -> APIError {
        let place = location
        let field = place.isEmpty ? String(key.prefix(64)) : "\(place.prefix(160)).\(key.prefix(64))"
        return APIError(
            status: 400, code: "duplicate_field", message: "field '\(field)' is given twice in one object; give it once",
            details: ["field": field])
    }

    private func unknownField(_ key: String, _ fields: WireShape.Fields) -> APIError {
        let place = location
        let field = place.isEmpty ? String(key.prefix(120)) : "\(place.prefix(120)).\(key.prefix(120))"
        return APIError(
            status: 400, code: "unknown_field",
            message: "unknown field '\(field)'; " + (place.isEmpty ? "the body" : "'\(place.prefix(120))'") + " takes "
                + fields.names,
            details: ["field": field])
    }
}
