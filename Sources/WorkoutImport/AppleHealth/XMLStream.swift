import Foundation

/// Where in a document something is: the byte offset, and the 1-based line and column (in characters: UTF-8
/// continuation bytes are not counted; a carriage return counts as one).
public struct XMLPosition: Sendable, Hashable, CustomStringConvertible {
    public var offset: Int
    public var line: Int
    public var column: Int

    public var description: String { "line \(line), column \(column)" }
}

/// Why a document cannot be read: what is wrong and where.
public struct XMLStreamError: Error, Sendable, Hashable, CustomStringConvertible {
    public var detail: String
    public var position: XMLPosition

    public var description: String { "\(position): \(detail)" }
}

/// One event of the pull parser.
public enum XMLEvent: Sendable, Hashable {
    /// An element's start tag with its attributes in document order (entities decoded); a
    /// self-closing tag is followed by its `.end`.
    case start(name: String, attributes: [XMLAttribute])
    case end(name: String)
    /// Character data between tags (entities decoded), only when it holds more than white space.
    case text(String)
}

/// One attribute of a start tag.
public struct XMLAttribute: Sendable, Hashable {
    public var name: String
    public var value: String
}

/// A streaming XML pull parser for the subset data exports use (Apple Health `export.xml`, GPX):
/// elements, attributes, character data, the five predefined entities and character references,
/// comments, CDATA and processing instructions. It holds one chunk of input at a time (constant
/// memory, whatever the document's size).
///
/// The document type declaration is skipped, never read: no validation, no external entity is
/// fetched, and an internal subset that is not well-formed (iOS 16's export, whose
/// `<!ATTLIST VisionPrescription` is never closed) does not stop the parse. Everything else that
/// is not well-formed (a tag never closed, mismatched end tags, `<` in an attribute value, an
/// attribute without a value, an unknown entity, a second root) is an `XMLStreamError` with its
/// line and column. Control characters XML 1.0 forbids (seen: `\u{0B}` in real exports) are read
/// as a space and counted (`forbiddenCharacters`).
///
/// The parser's state is not checked for exclusive access at run time (`@exclusivity(unchecked)`: those checks
/// were a sixth of a parse's instructions). That is safe as it is used: the class is not `Sendable` (one task
/// at a time), its state is private and touched by its own methods only, and no access to it overlaps another
/// unless a closure the parser calls (`read`, `skipsAttributes`, `skipsAttribute`, a `scanElement` reader) calls
/// back into the same parser, which none may do (`read` runs while the buffer is being written).
public final class XMLPullParser {
    /// Reads up to `count` bytes into the buffer it is given; 0 at the end of the input. It must not call the
    /// parser it feeds.
    public typealias Read = (UnsafeMutableRawBufferPointer) throws -> Int

    private let read: Read
    @exclusivity(unchecked) private var buffer: [UInt8]
    @exclusivity(unchecked) private var start = 0
    @exclusivity(unchecked) private var end = 0
    @exclusivity(unchecked) private var atEOF = false
    /// Position of `buffer[start]`.
    @exclusivity(unchecked) private var offset = 0
    @exclusivity(unchecked) private var line = 1
    @exclusivity(unchecked) private var column = 1
    @exclusivity(unchecked) private var stack: [String] = []
    @exclusivity(unchecked) private var pendingEnd: String?
    @exclusivity(unchecked) private var sawRoot = false
    /// Forbidden control characters read as spaces.
    @exclusivity(unchecked) public private(set) var forbiddenCharacters = 0
    /// Whether the document had a DOCTYPE (skipped).
    @exclusivity(unchecked) public private(set) var skippedDoctype = false
    /// The element names open at the current position, outermost first.
    public var openElements: [String] { stack }
    /// Where the parser is.
    public var position: XMLPosition { XMLPosition(offset: offset, line: line, column: column) }
    /// Whether every event of the input read so far has been given (no end event of a self-closing tag is still
    /// to come): `position` is then between two pieces of the document.
    public var givenAll: Bool { pendingEnd == nil }
    /// Where the last start tag read began (its `<`): a parser made `startingAt` it reads the element again.
    @exclusivity(unchecked) public private(set) var tagStart = XMLPosition(offset: 0, line: 1, column: 1)
    /// Whether a fragment without a single root is allowed (several top-level elements).
    public var allowsFragments: Bool
    /// Asked with an element's name and its parent's (nil at the top) before its attributes are read:
    /// true reads them for well-formedness only and gives the start event no attributes (no text is
    /// made of them: a pass that needs nothing of an element costs little more than finding its end).
    public var skipsAttributes: ((_ element: String, _ parent: String?) -> Bool)?
    /// Asked, for an element whose attributes are read (`skipsAttributes` false), with each attribute's name: true
    /// checks that attribute only and leaves it out of the start event (no text is made of it).
    public var skipsAttribute: ((_ element: String, _ attribute: String) -> Bool)?
    /// The longest name, attribute value or character data run held whole (longer is an error, so a
    /// hostile document cannot make the parser hold more).
    public static let tokenLimit = 16 << 20

    /// A parser reading its input through `read`, `chunkSize` bytes at a time.
    ///
    /// - Parameter startingAt: where the input's first byte is in a larger document (a part of it read again by
    ///   itself: its positions are then the document's).
    /// - Parameter inside: the elements open where the input begins, outermost first (a part of a document read
    ///   from between two children of its root: `["HealthData"]`); their end tags close them.
    public init(
        chunkSize: Int = 1 << 16, allowsFragments: Bool = false, startingAt: XMLPosition? = nil, inside: [String] = [],
        read: @escaping Read
    ) {
        self.read = read
        buffer = [UInt8](repeating: 0, count: max(chunkSize, 4096))
        self.allowsFragments = allowsFragments
        if let startingAt {
            offset = startingAt.offset
            line = startingAt.line
            column = startingAt.column
        }
        stack = inside
        sawRoot = !inside.isEmpty
    }

    /// A parser of `bytes` held in memory (tests, fuzzing).
    public convenience init(bytes: [UInt8], allowsFragments: Bool = false) {
        var position = 0
        let copy = bytes
        self.init(chunkSize: 4096, allowsFragments: allowsFragments) { target in
            let count = min(target.count, copy.count - position)
            guard count > 0 else { return 0 }
            copy.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[position..<(position + count)]))
            }
            position += count
            return count
        }
    }

    private func failure(_ detail: String) -> XMLStreamError {
        XMLStreamError(detail: detail, position: position)
    }

    /// Makes at least `count` bytes available from `start` unless the input ends first; returns
    /// how many are.
    private func fill(_ count: Int) throws(XMLStreamError) -> Int {
        if end - start >= count || atEOF { return end - start }
        if start > 0 {
            let remaining = end - start
            if remaining > 0 {
                buffer.withUnsafeMutableBufferPointer { pointer in
                    guard let base = pointer.baseAddress else { return }
                    (base).update(from: base + start, count: remaining)
                }
            }
            start = 0
            end = remaining
        }
        if buffer.count < count { buffer.append(contentsOf: [UInt8](repeating: 0, count: count - buffer.count)) }
        while end - start < count, !atEOF {
            let got: Int
            do {
                got = try buffer.withUnsafeMutableBytes { raw in
                    try read(UnsafeMutableRawBufferPointer(rebasing: raw[end...]))
                }
            } catch {
                throw failure("the input cannot be read (\(error))")
            }
            if got <= 0 { atEOF = true } else { end += got }
        }
        return end - start
    }

    @inline(__always)
    private func peek() throws(XMLStreamError) -> UInt8? {
        if start < end { return buffer[start] }
        return try fill(1) > 0 ? buffer[start] : nil
    }

    @inline(__always)
    private func advance() {
        let byte = buffer[start]
        start += 1
        offset += 1
        if byte == 0x0A {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
    }

    /// Consumes `count` bytes from `start` (all in the buffer), keeping the offset, line and column.
    @inline(__always)
    private func consume(_ count: Int) {
        let from = start
        let to = start + count
        var line = self.line
        var column = self.column
        buffer.withUnsafeBufferPointer { pointer in
            guard let base = pointer.baseAddress else { return }
            let raw = UnsafeRawPointer(base)
            var index = from
            // Eight bytes at a time: ASCII without a line feed (most of a document) is eight columns; any other word
            // byte by byte.
            while index < to {
                var stop = index + 1
                if to - index >= 8 {
                    let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                    let feeds = word ^ 0x0A0A_0A0A_0A0A_0A0A
                    // Non-zero when a byte of `feeds` is zero (a line feed in `word`).
                    let hasFeed = (feeds &- 0x0101_0101_0101_0101) & ~feeds & 0x8080_8080_8080_8080
                    if word & 0x8080_8080_8080_8080 == 0, hasFeed == 0 {
                        column += 8
                        index += 8
                        continue
                    }
                    stop = index + 8
                }
                while index < stop {
                    let byte = base[index]
                    if byte == 0x0A {
                        line += 1
                        column = 1
                    } else if byte & 0xC0 != 0x80 {
                        column += 1
                    }
                    index += 1
                }
            }
        }
        self.line = line
        self.column = column
        offset += count
        start = to
    }

    /// The length of the run of bytes from `start` that `accept` takes, all made available in the
    /// buffer (refilled and grown as needed, up to `tokenLimit`); not consumed. With `partial`, a
    /// run that fills a chunk is given as it is (the caller consumes it and goes on).
    @inline(__always)
    private func run(
        _ what: @autoclosure () -> String, partial: Bool = false, _ accept: (UInt8) -> Bool
    ) throws(XMLStreamError) -> Int {
        var scanned = 0
        while true {
            let from = start + scanned
            let to = end
            let stop = buffer.withUnsafeBufferPointer { pointer -> Int in
                var index = from
                while index < to, accept(pointer[index]) { index += 1 }
                return index
            }
            scanned = stop - start
            if stop < to || atEOF || (partial && scanned >= 1 << 16) { return scanned }
            guard scanned < Self.tokenLimit else { throw failure("\(what()) is longer than \(Self.tokenLimit) bytes") }
            let available = try fill(scanned + 4096)
            if available <= scanned { return scanned }
        }
    }

    /// The bytes `start..<start + count` as text.
    @inline(__always)
    private func text(_ count: Int) -> String {
        let from = start
        return buffer.withUnsafeBufferPointer { pointer in
            String(decoding: UnsafeBufferPointer(rebasing: pointer[from..<(from + count)]), as: UTF8.self)
        }
    }

    /// Whether the input continues with `literal` (not consumed).
    private func looksAt(_ literal: StaticString) throws(XMLStreamError) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard try fill(count) >= count else { return false }
        let pointer = literal.utf8Start
        for index in 0..<count where buffer[start + index] != pointer[index] { return false }
        return true
    }

    private func skip(_ count: Int) {
        for _ in 0..<count { advance() }
    }

    /// Skips up to and including `terminator`.
    private func skip(through terminator: StaticString, what: String) throws(XMLStreamError) {
        let from = position
        while true {
            if try looksAt(terminator) {
                skip(terminator.utf8CodeUnitCount)
                return
            }
            guard try peek() != nil else {
                throw XMLStreamError(detail: "\(what) is never closed", position: from)
            }
            advance()
        }
    }

    /// The next event; nil at the end of a well-formed document.
    public func next() throws(XMLStreamError) -> XMLEvent? {
        if let name = pendingEnd {
            pendingEnd = nil
            return .end(name: name)
        }
        while true {
            guard let byte = try peek() else {
                if let open = stack.last { throw failure("the document ends inside <\(open)> (cut short?)") }
                if !sawRoot && !allowsFragments { throw failure("the document holds no element") }
                return nil
            }
            if byte != UInt8(ascii: "<") {
                if let text = try characterData() { return .text(text) }
                continue
            }
            if try fill(2) >= 2, Self.isNameByte(buffer[start + 1]) {
                // The common case first: a start tag (`<` then a name byte, not `?`, `!` or `/`).
                let second = buffer[start + 1]
                if second != UInt8(ascii: "?"), second != UInt8(ascii: "!") { return try startTag() }
            }
            if try looksAt("<?") {
                try skip(through: "?>", what: "a processing instruction")
            } else if try looksAt("<!--") {
                try skip(through: "-->", what: "a comment")
            } else if try looksAt("<![CDATA[") {
                guard !stack.isEmpty else { throw failure("CDATA outside the root element") }
                skip(9)
                var bytes: [UInt8] = []
                let from = position
                while true {
                    if try looksAt("]]>") {
                        skip(3)
                        break
                    }
                    guard let next = try peek() else { throw XMLStreamError(detail: "a CDATA section is never closed", position: from) }
                    guard bytes.count < Self.tokenLimit else {
                        throw XMLStreamError(detail: "a CDATA section is longer than \(Self.tokenLimit) bytes", position: from)
                    }
                    bytes.append(next)
                    advance()
                }
                let text = String(decoding: bytes, as: UTF8.self)
                if text.contains(where: { !$0.isWhitespace }) { return .text(text) }
            } else if try looksAt("<!DOCTYPE") {
                guard !sawRoot else { throw failure("a DOCTYPE after the root element") }
                try skipDoctype()
            } else if try looksAt("</") {
                return try endTag()
            } else {
                return try startTag()
            }
        }
    }

    /// Skips the document type declaration: up to its `>`, or through its internal subset `[…]`
    /// and the `>` after it. Quoted text and comments in the subset are skipped as such; an
    /// unclosed declaration inside the subset does not matter.
    private func skipDoctype() throws(XMLStreamError) {
        let from = position
        skippedDoctype = true
        skip(9)
        var inSubset = false
        var quote: UInt8?
        while true {
            guard let byte = try peek() else { throw XMLStreamError(detail: "the DOCTYPE is never closed", position: from) }
            if let open = quote {
                if byte == open { quote = nil }
                advance()
                continue
            }
            if inSubset, try looksAt("<!--") {
                try skip(through: "-->", what: "a comment in the DOCTYPE")
                continue
            }
            advance()
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                // Quotes count only outside the subset's declarations' free text: an unclosed
                // declaration inside the subset may leave one open, so inside it they are not tracked.
                if !inSubset { quote = byte }
            case UInt8(ascii: "["): inSubset = true
            case UInt8(ascii: "]"): inSubset = false
            case UInt8(ascii: ">") where !inSubset: return
            default: break
            }
        }
    }

    @inline(__always)
    static func isNameByte(_ byte: UInt8) -> Bool {
        !(byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == UInt8(ascii: "/")
            || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "<")
            || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'"))
    }

    @inline(__always)
    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private func skipSpace() throws(XMLStreamError) {
        // No white space here (between an attribute's name, its '=' and its value, as a rule): nothing to run over.
        if start < end, !Self.isSpace(buffer[start]) { return }
        while true {
            let count = try run("white space", partial: true, Self.isSpace)
            consume(count)
            // A run ends at a byte that is not space or at the end of what one fill gave.
            guard let byte = try peek(), Self.isSpace(byte) else { return }
        }
    }

    private func name(_ what: @autoclosure () -> String) throws(XMLStreamError) -> String {
        let count = try run("a name", Self.isNameByte)
        let first = count > 0 ? buffer[start] : nil
        guard let first, !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")), first != UInt8(ascii: "-"),
            first != UInt8(ascii: ".")
        else {
            throw failure(count == 0 ? "\(what()) has no name" : "\(what()) name '\(text(count))' is not a valid XML name")
        }
        let name = text(count)
        consume(count)
        return name
    }

    private func startTag() throws(XMLStreamError) -> XMLEvent {
        let from = position
        tagStart = from
        advance()  // <
        if sawRoot && stack.isEmpty && !allowsFragments {
            throw XMLStreamError(detail: "a second root element after the first one ended", position: from)
        }
        let element = try name("an element")
        let keep = !(skipsAttributes?(element, stack.last) ?? false)
        if !keep, let closing = skippedTagLength() {
            // The whole tag is in the buffer and plain: checked in one sweep, the same as the loop below.
            consume(closing.length)
            sawRoot = true
            if closing.selfClosing { pendingEnd = element } else { stack.append(element) }
            return .start(name: element, attributes: [])
        }
        var attributes: [XMLAttribute] = []
        if keep { attributes.reserveCapacity(8) }
        // Names of attributes read but not kept (for the duplicate check).
        var names: [String] = []
        while true {
            let hadSpace = try peek().map(Self.isSpace) ?? false
            try skipSpace()
            guard let byte = try peek() else {
                throw XMLStreamError(detail: "the tag <\(element) is never closed (cut short?)", position: from)
            }
            if byte == UInt8(ascii: ">") {
                advance()
                sawRoot = true
                stack.append(element)
                return .start(name: element, attributes: attributes)
            }
            if byte == UInt8(ascii: "/") {
                advance()
                guard try peek() == UInt8(ascii: ">") else { throw failure("'/' in the tag <\(element) not followed by '>'") }
                advance()
                sawRoot = true
                pendingEnd = element
                return .start(name: element, attributes: attributes)
            }
            guard hadSpace else { throw failure("attributes of <\(element)> must be separated by white space") }
            let attribute = try name("an attribute of <\(element)>")
            try skipSpace()
            guard try peek() == UInt8(ascii: "=") else {
                throw failure("the attribute '\(attribute)' of <\(element)> has no value (an attribute name with a space?)")
            }
            advance()
            try skipSpace()
            guard let quote = try peek(), quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
                throw failure("the value of '\(attribute)' in <\(element)> is not quoted")
            }
            advance()
            let keepsValue = keep && !(skipsAttribute?(element, attribute) ?? false)
            let value = try decodedText(until: quote, inAttribute: true, keep: keepsValue)
            advance()  // closing quote
            if attributes.contains(where: { $0.name == attribute }) || names.contains(attribute) {
                throw failure("the attribute '\(attribute)' appears twice in <\(element)>")
            }
            if keepsValue {
                attributes.append(XMLAttribute(name: attribute, value: value))
            } else {
                names.append(attribute)
            }
        }
    }

    /// The rest of a start tag whose attributes are skipped (from `start`, after the element's name, through its
    /// `>`), when it is all in the buffer and its attributes are plain: ASCII names, values without an entity, `<`
    /// or a control character other than tab, line feed and carriage return. Nil otherwise (nothing consumed):
    /// the byte-by-byte loop of `startTag` reads it then, with its errors and their positions. What this accepts
    /// that loop accepts too, the same way: the export's record tags are read here at a few instructions a byte.
    private func skippedTagLength() -> (length: Int, selfClosing: Bool)? {
        let from = start
        let to = end
        guard to - from < Self.tokenLimit else { return nil }
        // Each attribute name's range, for the duplicate check (ASCII only, so bytes compare as text does); a tag
        // with more attributes than this is read by the loop.
        let most = 32
        return withUnsafeTemporaryAllocation(of: (from: Int, count: Int).self, capacity: most) { names in
            buffer.withUnsafeBufferPointer { pointer in
                Self.skippedTagLength(pointer, from: from, to: to, names: names).map { ($0.length, $0.selfClosing) }
            }
        }
    }

    /// `skippedTagLength()` over the bytes `from..<to` of the buffer, `names` holding the attribute names read (a
    /// dedicated reader of one element, `scanElement`, checks its tags with it too, and reads the attributes it needs
    /// from what it is given: `attributes` names, in `names`, and with `values` each one's value, between its quotes).
    static func skippedTagLength(
        _ pointer: UnsafeBufferPointer<UInt8>, from: Int, to: Int, names: UnsafeMutableBufferPointer<(from: Int, count: Int)>,
        values: UnsafeMutableBufferPointer<Range<Int>>? = nil
    ) -> (length: Int, selfClosing: Bool, attributes: Int)? {
        var named = 0
        var index = from
        while true {
            var hadSpace = false
            while index < to, Self.isSpace(pointer[index]) {
                index += 1
                hadSpace = true
            }
            guard index < to else { return nil }
            let byte = pointer[index]
            if byte == UInt8(ascii: ">") { return (index + 1 - from, false, named) }
            if byte == UInt8(ascii: "/") {
                guard index + 1 < to, pointer[index + 1] == UInt8(ascii: ">") else { return nil }
                return (index + 2 - from, true, named)
            }
            guard hadSpace else { return nil }
            // The attribute's name: name bytes, ASCII, not starting with a digit, '-' or '.'.
            let nameFrom = index
            while index < to, Self.isNameByte(pointer[index]) {
                guard pointer[index] < 0x80 else { return nil }
                index += 1
            }
            let nameCount = index - nameFrom
            guard nameCount > 0, index < to else { return nil }
            let first = pointer[nameFrom]
            guard !(first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")), first != UInt8(ascii: "-"),
                first != UInt8(ascii: ".")
            else { return nil }
            while index < to, Self.isSpace(pointer[index]) { index += 1 }
            guard index < to, pointer[index] == UInt8(ascii: "=") else { return nil }
            index += 1
            while index < to, Self.isSpace(pointer[index]) { index += 1 }
            guard index < to else { return nil }
            let quote = pointer[index]
            guard quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else { return nil }
            index += 1
            let valueFrom = index
            while index < to {
                let byte = pointer[index]
                if byte == quote { break }
                if byte == UInt8(ascii: "&") {
                    // One of the five predefined entities (`&lt;` in every device attribute); any other: the loop.
                    guard let length = predefinedEntityLength(pointer, at: index, to: to) else { return nil }
                    index += length
                    continue
                }
                guard byte != UInt8(ascii: "<"), byte >= 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
                else { return nil }
                index += 1
            }
            guard index < to else { return nil }
            index += 1  // the closing quote
            for name in names[0..<named] where name.count == nameCount {
                var same = true
                for offset in 0..<nameCount where pointer[name.from + offset] != pointer[nameFrom + offset] {
                    same = false
                    break
                }
                if same { return nil }
            }
            guard named < names.count, named < values?.count ?? names.count else { return nil }
            names[named] = (nameFrom, nameCount)
            values?[named] = valueFrom..<(index - 1)
            named += 1
        }
    }

    /// Whether `bytes[range]`, an attribute value of a tag `skippedTagLength` checked, is the text the parser's events
    /// give for it: no entity (which they decode), no tab, line feed or carriage return (which they read as a space).
    static func isLiteralValue(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        for index in range where bytes[index] == UInt8(ascii: "&") || bytes[index] < 0x20 { return false }
        return true
    }

    /// Where the element whose start tag (not self-closing) ends just before `from` ends: the index after its end
    /// tag, when all between is plain and in `bytes`: white space between tags, child tags checked by
    /// `skippedTagLength` with ASCII names, at most `open.count` levels, every end tag the open element's (the
    /// element's own name is `bytes[name]`). Nil for anything else (text, an entity, a comment, CDATA, a processing
    /// instruction, a tag cut by the end of `bytes`), which the parser's events then read, with their errors.
    /// `names` and `open` are scratch space.
    static func skippedElementEnd(
        _ bytes: UnsafeBufferPointer<UInt8>, from: Int, name: (from: Int, count: Int),
        names: UnsafeMutableBufferPointer<(from: Int, count: Int)>, open: UnsafeMutableBufferPointer<(from: Int, count: Int)>
    ) -> Int? {
        let count = bytes.count
        var index = from
        var depth = 0
        while true {
            while index < count, isSpace(bytes[index]) { index += 1 }
            guard index + 1 < count, bytes[index] == UInt8(ascii: "<") else { return nil }
            let second = bytes[index + 1]
            if second == UInt8(ascii: "/") {
                // An end tag: the open element's name, white space, `>`.
                let nameFrom = index + 2
                var at = nameFrom
                while at < count, isNameByte(bytes[at]) { at += 1 }
                let nameCount = at - nameFrom
                while at < count, isSpace(bytes[at]) { at += 1 }
                guard at < count, bytes[at] == UInt8(ascii: ">") else { return nil }
                let expected = depth == 0 ? name : open[depth - 1]
                guard nameCount == expected.count else { return nil }
                for offset in 0..<nameCount where bytes[nameFrom + offset] != bytes[expected.from + offset] { return nil }
                index = at + 1
                if depth == 0 { return index }
                depth -= 1
            } else {
                // A child's start tag: an ASCII name not starting with a digit, '-' or '.' (nor `?` or `!`).
                guard isNameByte(second), second != UInt8(ascii: "?"), second != UInt8(ascii: "!"),
                    !(second >= UInt8(ascii: "0") && second <= UInt8(ascii: "9")), second != UInt8(ascii: "-"),
                    second != UInt8(ascii: ".")
                else { return nil }
                let nameFrom = index + 1
                var at = nameFrom
                while at < count, isNameByte(bytes[at]) {
                    guard bytes[at] < 0x80 else { return nil }
                    at += 1
                }
                guard at < count, let tag = skippedTagLength(bytes, from: at, to: count, names: names) else { return nil }
                index = at + tag.length
                if !tag.selfClosing {
                    guard depth < open.count else { return nil }
                    open[depth] = (nameFrom, at - nameFrom)
                    depth += 1
                }
            }
        }
    }

    /// The length of `&lt;`, `&gt;`, `&amp;`, `&quot;` or `&apos;` at `index` (all before `to`); nil for anything else.
    private static func predefinedEntityLength(_ pointer: UnsafeBufferPointer<UInt8>, at index: Int, to: Int) -> Int? {
        func matches(_ literal: StaticString) -> Bool {
            let count = literal.utf8CodeUnitCount
            guard index + 1 + count <= to else { return false }
            let bytes = literal.utf8Start
            for offset in 0..<count where pointer[index + 1 + offset] != bytes[offset] { return false }
            return true
        }
        for literal: StaticString in ["lt;", "gt;", "amp;", "quot;", "apos;"] where matches(literal) {
            return 1 + literal.utf8CodeUnitCount
        }
        return nil
    }

    /// Reads the element that comes next (after white space) through `scan`, when `scan` takes it whole from what
    /// the buffer holds: `scan` is given the buffered bytes from the current position and returns how many of them
    /// it read, the white space before the element and the element through its end tag, and what it made of them;
    /// or nil, and nothing is consumed (`next()` reads on as before). A dedicated reader of one element kind (a
    /// GPX route point) so goes through its bytes once, not event by event.
    ///
    /// `scan` must take only what `next()` reads as that element without an error, a forbidden character or a
    /// token over `tokenLimit` (the bytes it is given are fewer than that), and make of it what `next()`'s events
    /// give: anything else it leaves to `next()` (nil), whose errors then say what and where as ever. Only inside
    /// the root element and never between a self-closing tag and its `.end`; `tagStart` is not moved. `scan` must
    /// not call this parser (its state is not checked for exclusive access: the class's note).
    func scanElement<T>(_ scan: (UnsafeBufferPointer<UInt8>) -> (length: Int, value: T)?) -> T? {
        guard pendingEnd == nil, !stack.isEmpty, start < end else { return nil }
        let from = start
        let to = min(end, start + Self.tokenLimit - 4096)
        let scanned = buffer.withUnsafeBufferPointer { pointer in scan(UnsafeBufferPointer(rebasing: pointer[from..<to])) }
        guard let scanned, scanned.length > 0, scanned.length <= to - from else { return nil }
        consume(scanned.length)
        return scanned.value
    }

    private func endTag() throws(XMLStreamError) -> XMLEvent {
        let from = position
        skip(2)
        let element = try name("an end tag")
        try skipSpace()
        guard try peek() == UInt8(ascii: ">") else {
            throw XMLStreamError(detail: "the end tag </\(element) is never closed", position: from)
        }
        advance()
        guard let open = stack.popLast() else {
            throw XMLStreamError(detail: "</\(element)> closes no open element", position: from)
        }
        guard open == element else {
            throw XMLStreamError(detail: "</\(element)> closes <\(open)>", position: from)
        }
        return .end(name: element)
    }

    /// Character data up to the next `<`; nil when it is only white space.
    private func characterData() throws(XMLStreamError) -> String? {
        // Fast path: the white space between elements.
        let spaces = try run("white space", partial: true, Self.isSpace)
        if spaces < end - start, buffer[start + spaces] == UInt8(ascii: "<") {
            consume(spaces)
            return nil
        }
        let text = try decodedText(until: UInt8(ascii: "<"), inAttribute: false)
        guard text.contains(where: { !$0.isWhitespace }) else { return nil }
        if stack.isEmpty { throw failure("text outside the root element") }
        return text
    }

    /// Reads and decodes text up to (not including) `terminator`; with `keep` false only checks it
    /// (and gives "").
    private func decodedText(until terminator: UInt8, inAttribute: Bool, keep: Bool = true) throws(XMLStreamError) -> String {
        var bytes: [UInt8] = []
        // Not kept, the decoded length is only counted (what is decoded is dropped at once), so that the length
        // limit is the same whether a value is kept or skipped.
        var skipped = 0
        var first = true
        while true {
            if !keep {
                skipped += bytes.count
                bytes.removeAll(keepingCapacity: true)
            }
            // Fast path: a run of plain bytes, made text at once when it is all there is.
            let count = try run("a text or attribute value", partial: true) { byte in
                !(byte == terminator || byte == UInt8(ascii: "&") || byte == UInt8(ascii: "<") || byte < 0x20
                    || byte == UInt8(ascii: "]"))
            }
            if first, count < end - start, buffer[start + count] == terminator {
                let value = keep ? text(count) : ""
                consume(count)
                return value
            }
            first = false
            if count > 0 {
                if keep {
                    let from = start
                    buffer.withUnsafeBufferPointer { pointer in
                        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: pointer[from..<(from + count)]))
                    }
                } else {
                    skipped += count
                }
                consume(count)
            }
            guard bytes.count + skipped <= Self.tokenLimit else {
                throw failure("a text or attribute value is longer than \(Self.tokenLimit) bytes")
            }
            guard let byte = try peek() else {
                if inAttribute { throw failure("an attribute value is never closed (cut short?)") }
                return keep ? String(decoding: bytes, as: UTF8.self) : ""
            }
            if byte == terminator { return keep ? String(decoding: bytes, as: UTF8.self) : "" }
            if byte == UInt8(ascii: "<") { throw failure("'<' inside an attribute value") }
            if byte == UInt8(ascii: "&") {
                try entity(into: &bytes)
                continue
            }
            if byte < 0x20, byte != 0x09, byte != 0x0A, byte != 0x0D {
                forbiddenCharacters += 1
                bytes.append(0x20)
                advance()
                continue
            }
            if !inAttribute, byte == UInt8(ascii: "]"), try looksAt("]]>") {
                throw failure("']]>' in character data")
            }
            bytes.append(inAttribute && (byte == 0x0A || byte == 0x09 || byte == 0x0D) ? 0x20 : byte)
            advance()
        }
    }

    private func entity(into bytes: inout [UInt8]) throws(XMLStreamError) {
        let from = position
        advance()  // &
        var name: [UInt8] = []
        while let byte = try peek(), byte != UInt8(ascii: ";") {
            guard name.count < 12, byte != UInt8(ascii: "<"), byte != UInt8(ascii: "&"), !Self.isSpace(byte) else {
                throw XMLStreamError(detail: "'&' that starts no entity (write &amp;)", position: from)
            }
            name.append(byte)
            advance()
        }
        guard try peek() == UInt8(ascii: ";") else {
            throw XMLStreamError(detail: "an entity is never closed", position: from)
        }
        advance()
        let text = String(decoding: name, as: UTF8.self)
        switch text {
        case "lt": bytes.append(UInt8(ascii: "<"))
        case "gt": bytes.append(UInt8(ascii: ">"))
        case "amp": bytes.append(UInt8(ascii: "&"))
        case "quot": bytes.append(UInt8(ascii: "\""))
        case "apos": bytes.append(UInt8(ascii: "'"))
        default:
            var scalarValue: UInt32?
            if text.hasPrefix("#x") || text.hasPrefix("#X") {
                scalarValue = UInt32(text.dropFirst(2), radix: 16)
            } else if text.hasPrefix("#") {
                scalarValue = UInt32(text.dropFirst(), radix: 10)
            } else {
                throw XMLStreamError(detail: "unknown entity &\(text); (only the five XML entities are defined)", position: from)
            }
            guard let value = scalarValue, let scalar = Unicode.Scalar(value), value != 0 else {
                throw XMLStreamError(detail: "&\(text); is not a valid character", position: from)
            }
            bytes.append(contentsOf: Array(String(Character(scalar)).utf8))
        }
    }
}
