import Foundation
import WorkoutModel

/// Route points of an Apple Health `workout-routes/*.gpx` file (GPX 1.1: `trkpt lat lon` with `ele`,
/// `time` in UTC and un-namespaced `extensions/speed`, `course`, `hAcc`).
enum HealthGPX {
    /// `2025-09-26T17:00:18Z` (optionally with fractional seconds or an offset).
    static func time(_ text: String) -> Date? {
        var trimmed = trimming(text)
        guard trimmed.utf8.count >= 20 else { return nil }
        // The form Apple writes (`2025-09-26T17:00:18Z`) read directly from its bytes: a formatter per point is slow.
        // An impossible date in this form (2025-02-31) is refused here, not handed on to be rolled over.
        if trimmed.utf8.count == 20, trimmed.utf8.last == UInt8(ascii: "Z") {
            return trimmed.withUTF8 { HealthDate.parseUTC($0) }
        }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: trimmed) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: trimmed)
    }

    /// `text` without the white space and line ends around it (as `trimmingCharacters(in: .whitespacesAndNewlines)`,
    /// which is only called when the text starts or ends with anything but a printable ASCII character).
    static func trimming(_ text: String) -> String {
        let utf8 = text.utf8
        if let first = utf8.first, let last = utf8.last, first > 0x20, first < 0x7F, last > 0x20, last < 0x7F {
            return text
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The points of a GPX file (read through `read`) in time order; `keep` filters them as they are read.
    ///
    /// Each `trkpt` element is read by `scanPoint` straight from the parser's buffer when it is plain (the form
    /// Apple writes: ASCII, no entity, comment or CDATA, all in the buffer); any other is read event by event
    /// below. Both make the same point of the same element, and a document that is not well-formed is the same
    /// error (the scan leaves everything it does not take to the parser).
    static func points(read: @escaping XMLPullParser.Read, keep: (Date) -> Bool = { _ in true }) throws(XMLStreamError)
        -> [RoutePoint]
    {
        try points(read: read, scans: true, keep: keep)
    }

    /// `points(read:keep:)`; with `scans` false every element is read event by event (tests compare the two).
    static func points(read: @escaping XMLPullParser.Read, scans: Bool, keep: (Date) -> Bool = { _ in true })
        throws(XMLStreamError) -> [RoutePoint]
    {
        let parser = XMLPullParser(read: read)
        // Only a point's attributes are read: every other start tag is checked in one sweep, no text made of it.
        parser.skipsAttributes = { element, _ in element != "trkpt" }
        var points: [RoutePoint] = []
        var current: (latitude: Double, longitude: Double)?
        // The last text of each child a point is read from (a dictionary by element name cost a hash per text).
        var fields = Fields()
        var element: String?
        while true {
            if scans, let scanned = parser.scanElement(scanPoint) {
                // As the events of the element would leave it: no point open, no element to take a text.
                current = nil
                element = nil
                guard let latitude = scanned.latitude, let longitude = scanned.longitude, let date = scanned.date,
                    keep(date)
                else { continue }
                if let point = point(
                    date: date, latitude: latitude, longitude: longitude, altitude: scanned.altitude,
                    speed: scanned.speed, course: scanned.course, horizontalAccuracy: scanned.horizontalAccuracy)
                {
                    points.append(point)
                }
                continue
            }
            guard let event = try parser.next() else { break }
            switch event {
            case .start(let name, let attributes):
                if name == "trkpt" {
                    let latitude = attributes.first { $0.name == "lat" }.flatMap { Double($0.value) }
                    let longitude = attributes.first { $0.name == "lon" }.flatMap { Double($0.value) }
                    if let latitude, let longitude { current = (latitude, longitude) } else { current = nil }
                    fields = Fields()
                } else {
                    element = name
                }
            case .text(let text):
                if current != nil, let element { fields.set(element, text) }
            case .end(let name):
                element = nil
                guard name == "trkpt", let open = current else { continue }
                current = nil
                guard let date = fields.time.flatMap(time), keep(date) else { continue }
                func number(_ text: String?) -> Double? {
                    text.flatMap { Double(trimming($0)) }.flatMap { $0.isFinite ? $0 : nil }
                }
                if let point = point(
                    date: date, latitude: open.latitude, longitude: open.longitude, altitude: number(fields.ele),
                    speed: number(fields.speed), course: number(fields.course),
                    horizontalAccuracy: number(fields.hAcc))
                {
                    points.append(point)
                }
            }
        }
        return points.sorted { $0.date < $1.date }
    }

    /// A point from its values as read (finite numbers or nil); a value out of its range is left out, and a point
    /// that is no place on Earth is nil.
    private static func point(
        date: Date, latitude: Double, longitude: Double, altitude: Double?, speed: Double?, course: Double?,
        horizontalAccuracy: Double?
    ) -> RoutePoint? {
        let point = RoutePoint(
            date: date, latitude: latitude, longitude: longitude, altitude: altitude,
            speed: speed.flatMap { $0 >= 0 ? $0 : nil }, course: course.flatMap { $0 >= 0 && $0 < 360 ? $0 : nil },
            horizontalAccuracy: horizontalAccuracy.flatMap { $0 >= 0 ? $0 : nil })
        return point.isValid ? point : nil
    }

    /// What `scanPoint` read of one `trkpt` element: what its events would give the loop of `points`.
    struct ScannedPoint {
        /// Nil when the attribute is missing or not a number (the point is then left out).
        var latitude: Double?
        var longitude: Double?
        /// The last `time` text's date; nil without one or when it is no date.
        var date: Date?
        /// The last texts of `ele`, `speed`, `course` and `hAcc` as finite numbers; nil without one or when it is none.
        var altitude: Double?
        var speed: Double?
        var course: Double?
        var horizontalAccuracy: Double?
    }

    /// Reads a plain `trkpt` element from `bytes` (white space first): how many bytes it took, and what the
    /// parser's events of the element would have given. Nil for anything else, or anything it does not read
    /// itself, left to the parser (whose events make the same point or whose error says what is wrong): another
    /// element, a self-closing or nested `trkpt`, an entity, a comment, CDATA or a processing instruction, `]`, a
    /// control character or a byte over 0x7F in text, a name that is not ASCII, text right inside `trkpt` before
    /// its first child, more than 16 levels, an element that does not end in `bytes`. What it takes is well-formed
    /// as the parser has it: tags checked by `XMLPullParser.skippedTagLength` (attributes separated, quoted, none
    /// twice), every end tag the open element's.
    static func scanPoint(_ bytes: UnsafeBufferPointer<UInt8>) -> (length: Int, value: ScannedPoint)? {
        let count = bytes.count
        var index = 0
        while index < count, XMLPullParser.isSpace(bytes[index]) { index += 1 }
        let open = index
        // `<trkpt` then a byte that ends the name.
        guard count - open > 7, bytes[open] == UInt8(ascii: "<"), bytes[open + 1] == UInt8(ascii: "t"),
            bytes[open + 2] == UInt8(ascii: "r"), bytes[open + 3] == UInt8(ascii: "k"),
            bytes[open + 4] == UInt8(ascii: "p"), bytes[open + 5] == UInt8(ascii: "t"),
            !XMLPullParser.isNameByte(bytes[open + 6])
        else { return nil }
        // Attribute names (for the duplicate check) and the open children's names, as (from, count).
        let most = 32
        let deepest = 16
        return withUnsafeTemporaryAllocation(of: (from: Int, count: Int).self, capacity: most + deepest) {
            scratch -> (length: Int, value: ScannedPoint)? in
            let names = UnsafeMutableBufferPointer(rebasing: scratch[0..<most])
            var point = ScannedPoint()
            // lat and lon, from the tag checked: a tag with a value holding an entity or a line end (which the
            // parser decodes or reads as a space) is left to the parser.
            let checked = withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: most) {
                values -> (length: Int, selfClosing: Bool, attributes: Int)? in
                guard
                    let tag = XMLPullParser.skippedTagLength(
                        bytes, from: open + 6, to: count, names: names, values: values),
                    !tag.selfClosing
                else { return nil }
                for index in 0..<tag.attributes {
                    let range = values[index]
                    guard XMLPullParser.isLiteralValue(bytes, range) else { return nil }
                    let name = names[index]
                    if name.count == 3, bytes[name.from] == UInt8(ascii: "l") {
                        if bytes[name.from + 1] == UInt8(ascii: "a"), bytes[name.from + 2] == UInt8(ascii: "t") {
                            point.latitude = number(bytes, range.lowerBound, range.upperBound)
                        } else if bytes[name.from + 1] == UInt8(ascii: "o"), bytes[name.from + 2] == UInt8(ascii: "n") {
                            point.longitude = number(bytes, range.lowerBound, range.upperBound)
                        }
                    }
                }
                return tag
            }
            guard let tag = checked else { return nil }
            let reads = point.latitude != nil && point.longitude != nil
            index = open + 6 + tag.length
            let stack = UnsafeMutableBufferPointer(rebasing: scratch[most..<(most + deepest)])
            var depth = 0
            // The child whose start tag came last, while no end tag followed it: the one a text is of.
            var textOf: (from: Int, count: Int)?
            var sawChild = false
            var time: Range<Int>?
            var ele: Range<Int>?
            var speed: Range<Int>?
            var course: Range<Int>?
            var hAcc: Range<Int>?
            while true {
                // Text up to the next tag.
                let textFrom = index
                var blank = true
                while index < count {
                    let byte = bytes[index]
                    if byte == UInt8(ascii: "<") { break }
                    if byte == UInt8(ascii: "&") || byte == UInt8(ascii: "]") || byte >= 0x80 { return nil }
                    if byte < 0x20 {
                        guard byte == 0x09 || byte == 0x0A || byte == 0x0D else { return nil }
                    } else if byte != 0x20 {
                        blank = false
                    }
                    index += 1
                }
                guard index + 1 < count else { return nil }
                if !blank {
                    // Right inside `trkpt` before any child, the text would be taken as the text of an element
                    // before the point (the parser's events do not say where it is): left to the parser.
                    guard sawChild else { return nil }
                    if reads, let name = textOf {
                        let range = textFrom..<index
                        switch field(bytes, name) {
                        case 1: time = range
                        case 2: ele = range
                        case 3: speed = range
                        case 4: course = range
                        case 5: hAcc = range
                        default: break
                        }
                    }
                }
                let second = bytes[index + 1]
                if second == UInt8(ascii: "/") {
                    // An end tag: the open element's name, white space, `>`.
                    let nameFrom = index + 2
                    var at = nameFrom
                    while at < count, XMLPullParser.isNameByte(bytes[at]) { at += 1 }
                    let nameCount = at - nameFrom
                    while at < count, XMLPullParser.isSpace(bytes[at]) { at += 1 }
                    guard at < count, bytes[at] == UInt8(ascii: ">") else { return nil }
                    let expected = depth == 0 ? (from: open + 1, count: 5) : stack[depth - 1]
                    guard nameCount == expected.count else { return nil }
                    for offset in 0..<nameCount where bytes[nameFrom + offset] != bytes[expected.from + offset] {
                        return nil
                    }
                    textOf = nil
                    index = at + 1
                    if depth == 0 { break }
                    depth -= 1
                } else if XMLPullParser.isNameByte(second), second != UInt8(ascii: "?"), second != UInt8(ascii: "!") {
                    // A child's start tag: an ASCII name not starting with a digit, '-' or '.'; not another point.
                    let nameFrom = index + 1
                    var at = nameFrom
                    while at < count, XMLPullParser.isNameByte(bytes[at]) {
                        guard bytes[at] < 0x80 else { return nil }
                        at += 1
                    }
                    let nameCount = at - nameFrom
                    guard !(second >= UInt8(ascii: "0") && second <= UInt8(ascii: "9")), second != UInt8(ascii: "-"),
                        second != UInt8(ascii: "."), at < count,
                        !(nameCount == 5 && field(bytes, (nameFrom, nameCount)) == 6),
                        let child = XMLPullParser.skippedTagLength(bytes, from: at, to: count, names: names)
                    else { return nil }
                    sawChild = true
                    index = at + child.length
                    if child.selfClosing {
                        textOf = nil
                    } else {
                        guard depth < deepest else { return nil }
                        stack[depth] = (nameFrom, nameCount)
                        depth += 1
                        textOf = (nameFrom, nameCount)
                    }
                } else {
                    // A comment, CDATA, a processing instruction, or no name after `<`.
                    return nil
                }
            }
            if reads {
                point.date = time.flatMap { date(bytes, $0) }
                func finite(_ range: Range<Int>?) -> Double? {
                    guard let range else { return nil }
                    let trimmed = trim(bytes, range)
                    return number(bytes, trimmed.lowerBound, trimmed.upperBound).flatMap { $0.isFinite ? $0 : nil }
                }
                point.altitude = finite(ele)
                point.speed = finite(speed)
                point.course = finite(course)
                point.horizontalAccuracy = finite(hAcc)
            }
            return (index, point)
        }
    }

    /// Which of the names a point's reading cares for `bytes[name]` is: 1 `time`, 2 `ele`, 3 `speed`, 4 `course`,
    /// 5 `hAcc`, 6 `trkpt`; 0 for any other.
    private static func field(_ bytes: UnsafeBufferPointer<UInt8>, _ name: (from: Int, count: Int)) -> Int {
        func matches(_ literal: StaticString) -> Bool {
            guard literal.utf8CodeUnitCount == name.count else { return false }
            let pointer = literal.utf8Start
            for offset in 0..<name.count where bytes[name.from + offset] != pointer[offset] { return false }
            return true
        }
        switch name.count {
        case 3: return matches("ele") ? 2 : 0
        case 4: return matches("time") ? 1 : matches("hAcc") ? 5 : 0
        case 5: return matches("speed") ? 3 : matches("trkpt") ? 6 : 0
        case 6: return matches("course") ? 4 : 0
        default: return 0
        }
    }

    /// `range` without the white space (space, tab, line ends) at its ends.
    private static func trim(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        var from = range.lowerBound
        var to = range.upperBound
        while from < to, XMLPullParser.isSpace(bytes[from]) { from += 1 }
        while to > from, XMLPullParser.isSpace(bytes[to - 1]) { to -= 1 }
        return from..<to
    }

    /// The date of a `time` text (ASCII, with white space around it maybe), as `time(_:)` reads it.
    private static func date(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Date? {
        let trimmed = trim(bytes, range)
        guard trimmed.count >= 20 else { return nil }
        let text = UnsafeBufferPointer(rebasing: bytes[trimmed])
        if trimmed.count == 20, text[19] == UInt8(ascii: "Z") { return HealthDate.parseUTC(text) }
        return time(String(decoding: text, as: UTF8.self))
    }

    /// Exact powers of ten as `Double`s (10²² is the last).
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
        1e19, 1e20, 1e21, 1e22,
    ]

    /// `Double(String(bytes[from..<to]))`: a plain decimal (`-12.345678`: at most 19 digits, a value under 2⁵³ and
    /// 22 digits after the point) from its digits, correctly rounded as the standard library's parse is (an exact
    /// integer divided by an exact power of ten, one rounding); anything else by the standard library.
    static func number(_ bytes: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int) -> Double? {
        var index = from
        let negative = index < to && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        var fraction = 0
        let integerFrom = index
        var plain = true
        while index < to, bytes[index] &- UInt8(ascii: "0") < 10 {
            mantissa = mantissa &* 10 &+ UInt64(bytes[index] &- UInt8(ascii: "0"))
            digits += 1
            index += 1
        }
        if index == integerFrom { plain = false }
        if plain, index < to, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let fractionFrom = index
            while index < to, bytes[index] &- UInt8(ascii: "0") < 10 {
                mantissa = mantissa &* 10 &+ UInt64(bytes[index] &- UInt8(ascii: "0"))
                digits += 1
                index += 1
            }
            fraction = index - fractionFrom
            if fraction == 0 { plain = false }
        }
        if plain, index == to, digits <= 19, mantissa <= 1 << 53, fraction < powersOfTen.count {
            let magnitude = fraction == 0 ? Double(mantissa) : Double(mantissa) / powersOfTen[fraction]
            return negative ? -magnitude : magnitude
        }
        return Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[from..<to]), as: UTF8.self))
    }

    /// The texts of a point's children that are read (`time`, `ele`, and the extensions' `speed`, `course`, `hAcc`):
    /// the last text of each, as the point's element gives them; every other child's text is not kept.
    private struct Fields {
        var time: String?
        var ele: String?
        var speed: String?
        var course: String?
        var hAcc: String?

        mutating func set(_ element: String, _ text: String) {
            switch element {
            case "time": time = text
            case "ele": ele = text
            case "speed": speed = text
            case "course": course = text
            case "hAcc": hAcc = text
            default: break
            }
        }
    }
}
