import Foundation
import Testing
@testable import WorkoutImport
import WorkoutModel
import WorkoutTestSupport

/// The GPX route reader's two ways through a file: a plain point read straight from the parser's buffer
/// (`HealthGPX.scanPoint`) and any other event by event. Both must give the same points, bit for bit, and the
/// same error for a file that is not well-formed.
extension AppleHealthReadingTests {
    /// Reads `bytes` in pieces of at most `chunk` bytes.
    static func reader(_ bytes: [UInt8], chunk: Int) -> XMLPullParser.Read {
        var position = 0
        return { target in
            let count = min(target.count, bytes.count - position, chunk)
            bytes.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[position..<(position + count)]))
            }
            position += count
            return count
        }
    }

    /// A point's values as bits (the sign of a zero and the last digit count), nil where a value is missing.
    static func bits(_ point: RoutePoint) -> [UInt64?] {
        [
            point.date.timeIntervalSinceReferenceDate.bitPattern, point.latitude.bitPattern, point.longitude.bitPattern,
            point.altitude?.bitPattern, point.speed?.bitPattern, point.course?.bitPattern,
            point.horizontalAccuracy?.bitPattern,
        ]
    }

    /// The points of `bytes` as bits, or the error, read with or without the scan.
    static func gpxOutcome(_ bytes: [UInt8], scans: Bool, chunk: Int = 4096) -> Result<[[UInt64?]], XMLStreamError> {
        Result { () throws(XMLStreamError) in
            try HealthGPX.points(read: reader(bytes, chunk: chunk), scans: scans).map(bits)
        }
    }

    /// How many `trkpt` elements of `bytes` the scan takes (the rest are read event by event), and how many there are.
    static func scannedPoints(_ bytes: [UInt8], chunk: Int) throws -> (scanned: Int, all: Int) {
        let parser = XMLPullParser(read: reader(bytes, chunk: chunk))
        var scanned = 0
        var all = 0
        while true {
            if parser.scanElement(HealthGPX.scanPoint) != nil {
                scanned += 1
                all += 1
                continue
            }
            guard let event = try parser.next() else { break }
            if case .start("trkpt", _) = event { all += 1 }
        }
        return (scanned, all)
    }

    /// Every real route file: the same points whether read with the scan or event by event, however the file comes
    /// in pieces (a point cut by the end of what the buffer holds is read event by event); and the scan takes
    /// almost every point of Apple's form. Seen failing with the scan's `speed` and `course` swapped, and with
    /// `number` multiplying by a power of ten below one (not exact).
    @Test func gpxPointsScannedAreThoseTheEventsGiveOnEveryRealRouteFile() throws {
        let folder = AppleHealthImportTests.folder
        let files = try #require(FileManager.default.enumerator(atPath: folder)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".gpx") }.sorted()
        #expect(files.count >= 20)
        var total = 0
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: (folder as NSString).appendingPathComponent(file))))
            let events = try Self.gpxOutcome(bytes, scans: false).get()
            #expect(!events.isEmpty, "\(file)")
            total += events.count
            for chunk in [4096, 1000, 65536, 1 << 20] {
                #expect(Self.gpxOutcome(bytes, scans: true, chunk: chunk) == .success(events), "\(file), chunk \(chunk)")
            }
            let counts = try Self.scannedPoints(bytes, chunk: 1 << 20)
            #expect(counts.all >= events.count && counts.scanned * 100 >= counts.all * 99, "\(file): \(counts)")
        }
        #expect(total > 10_000)
    }

    /// A GPX file with `point` as its second point, between two plain ones.
    static func gpx(point: String) -> [UInt8] {
        let plain = { (second: Int) in
            "<trkpt lon=\"13.4\" lat=\"52.5\"><ele>34.0</ele><time>2025-03-01T10:00:0\(second)Z</time>"
                + "<extensions><speed>2.5</speed><course>90.0</course><hAcc>3.0</hAcc><vAcc>2.0</vAcc></extensions></trkpt>"
        }
        return Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <gpx version="1.1" creator="Apple Health Export" xmlns="http://www.topografix.com/GPX/1/1">
             <trk><name>Route</name><trkseg>
              \(plain(0))
              \(point)
              \(plain(9))
             </trkseg></trk>
            </gpx>

            """.utf8)
    }

    /// How many of the cases below, from the first, are meant for the scan; how many after them for the events.
    static let scannedCases = 15
    static let eventCases = 11

    /// Points that are not Apple's plain form, and files that are not well-formed around or in a point: the same
    /// points or the same error (what and where) both ways. Seen failing: with the scan's end-tag check taken out
    /// (a point whose end tag closes another element was taken), and with `speed` and `course` swapped.
    @Test func gpxPointsOutOfTheCommonFormAndMalformedOnesReadAlikeWithAndWithoutTheScan() throws {
        let time = "<time>2025-03-01T10:00:05Z</time>"
        // (the second point, whether the file is an error)
        let cases: [(String, Bool)] = [
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34.0</ele>\(time)</trkpt>", false),
            // Values in other forms, and out of their ranges.
            ("<trkpt lon=\"13.5\" lat=\"-0.0\"><ele> 34.0\n</ele>\(time)<extensions><speed>-1</speed></extensions></trkpt>", false),
            ("<trkpt lon=\"+13.5\" lat=\"52.5e0\"><ele>.5</ele>\(time)<extensions><course>360</course></extensions></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"91\">\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\">\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5 \">\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>1234567890123456789012345.5</ele>\(time)<extensions><hAcc>nan</hAcc></extensions></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>inf</ele>\(time)<extensions><speed>0.30000000000000004</speed></extensions></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>9007199254740993</ele><time>2025-03-01T10:00:05.5Z</time></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><time>2025-03-01T12:00:05+02:00</time></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><time>2025-02-31T10:00:05Z</time></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><time>2025-03-01T10:00:05Z</time><time>2025-03-01T10:00:06Z</time></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><time>2025-03-01<b/>T10:00:05Z</time></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><time>2025-03-01T10:00:05Z<b>x</b></time><ele/><ele>4</ele></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\" lat2='x' ><ele >3</ele >\(time)</trkpt >", false),
            // Left to the events: entities, a tab, comments, CDATA, non-ASCII, nesting, text right in the point.
            ("<trkpt lon=\"13.5\" lat=\"5&#50;.5\"><ele>3&#46;5</ele>\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"\t52.5\">\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>3<!-- c -->4</ele>\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele><![CDATA[34]]></ele>\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>\u{A0}34</ele><name>Ä</name>\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34]</ele>\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34</ele>\(time)<trkpt lon=\"1\" lat=\"2\">\(time)</trkpt></trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\">2025<ele>34</ele>\(time)</trkpt>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"/>", false),
            ("<time><trkpt lon=\"13.5\" lat=\"52.5\">2025-03-01T10:00:05Z</trkpt></time>", false),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><?pi x?>\(time)</trkpt>", false),
            // Not well-formed.
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34</time>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34</ele>\(time)</trkpt></trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\" lat=\"52.6\">\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\"lat=\"52.5\">\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat>\(time)</trkpt>", true),
            ("<trkpt lon=\"13<5\" lat=\"52.5\">\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>&pi;</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34]]>5</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><1ele>34</1ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele a=\"1\" a=\"2\">34</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34</ele \(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><>34</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>3\u{01}4</ele>\(time)</trkpt>", false),
        ]
        for (index, (point, malformed)) in cases.enumerated() {
            let bytes = Self.gpx(point: point)
            let events = Self.gpxOutcome(bytes, scans: false)
            #expect(Self.gpxOutcome(bytes, scans: true) == events, "\(point)")
            if case .failure = events { #expect(malformed, "\(point): \(events)") } else { #expect(!malformed, "\(point)") }
            // The scan's own cases are taken by the scan, the file's three points (else the comparison above would
            // hold without it); those left to the events are not.
            if index < Self.scannedCases {
                let (scanned, all) = try Self.scannedPoints(bytes, chunk: 4096)
                #expect(scanned == all && all == 3, "\(point): \(scanned) of \(all) points scanned")
            } else if index < Self.scannedCases + Self.eventCases {
                let (scanned, all) = try Self.scannedPoints(bytes, chunk: 4096)
                #expect(scanned < all, "\(point): \(scanned) of \(all) points scanned")
            }
        }
        // A file cut short at every byte of its second point: the same error both ways.
        let whole = Self.gpx(point: "<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34.0</ele>\(time)</trkpt>")
        for end in stride(from: 200, to: whole.count - 1, by: 3) {
            let cut = Array(whole[0..<end])
            let events = Self.gpxOutcome(cut, scans: false)
            #expect(Self.gpxOutcome(cut, scans: true) == events, "cut at \(end)")
            #expect(throws: XMLStreamError.self) { try events.get() }
        }
        // The plain form is scanned: the three points of a plain file, none by the events.
        let plain = Self.gpx(point: "<trkpt lon=\"13.5\" lat=\"-0.000000\"><ele>34.0</ele>\(time)</trkpt>")
        #expect(try Self.scannedPoints(plain, chunk: 4096) == (3, 3))
        let points = try HealthGPX.points(read: Self.reader(plain, chunk: 4096))
        #expect(points.map(\.latitude.sign) == [.plus, .minus, .plus])
        #expect(points.map(\.speed) == [2.5, nil, 2.5] && points.map(\.course) == [90, nil, 90])
        #expect(points.map(\.horizontalAccuracy) == [3, nil, 3] && points.map(\.altitude) == [34, 34, 34])
    }

    /// Reads `bytes` with a read ending at each of `cuts` (the parser's buffer ends there until it asks for more), the
    /// rest in reads of at most `chunk` bytes.
    static func reader(_ bytes: [UInt8], cuts: [Int], chunk: Int = 1 << 20) -> XMLPullParser.Read {
        var position = 0
        return { target in
            let cut = cuts.first { $0 > position } ?? bytes.count
            let count = min(target.count, cut - position, chunk)
            guard count > 0 else { return 0 }
            bytes.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[position..<(position + count)]))
            }
            position += count
            return count
        }
    }

    /// The points of `bytes` as bits, or the error, read with or without the scan through `read`.
    static func gpxOutcome(read: @escaping XMLPullParser.Read, scans: Bool) -> Result<[[UInt64?]], XMLStreamError> {
        Result { () throws(XMLStreamError) in try HealthGPX.points(read: read, scans: scans).map(bits) }
    }

    /// A malformed point (an attribute without white space before it, one twice, a tag or an end tag never closed,
    /// `<` in a value, an end tag of another element, an unknown entity) or one with a bad number, cut by the end of
    /// a read at every byte from before it to after it, and in reads of 1 to 16 bytes: the scan leaves it to the
    /// events, which give exactly what they give reading it whole (the same error, what, offset, line and column, or
    /// the same points). Seen failing when the scan took an element that does not end in the buffer as read up to
    /// the buffer's end (instead of leaving it to the events), and when it took an end tag the buffer's end cut
    /// (`</trkpt` without its `>`) as complete.
    @Test func aMalformedPointAcrossTheEndOfAReadIsTheErrorTheEventsGive() throws {
        let time = "<time>2025-03-01T10:00:05Z</time>"
        // (the second point, whether the file is an error)
        let cases: [(String, Bool)] = [
            ("<trkpt lon=\"13.5\"lat=\"52.5\"><ele>34.0</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\" lon=\"13.6\"><ele>34.0</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"<ele>34.0</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34.0</ele\n\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34.0</ele>\(time)</trkpt\n", true),
            ("<trkpt lon=\"13.5\" lat=\"52<5\"><ele>34.0</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34.0</time>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>3&pi;</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5\" <ele>34.0</ele>\(time)</trkpt>", true),
            ("<trkpt lon=\"13.5\" lat=\"52.5.1\"><ele>34.0</ele>\(time)</trkpt>", false),
            (
                "<trkpt lon=\"13.5\" lat=\"52.5\"><ele>3.4.0</ele>\(time)<extensions><speed>1e400</speed></extensions></trkpt>",
                false
            ),
            ("<trkpt lon=\"13.5\" lat=\"52.5\"><ele>34.0</ele><time>2025-03-01T10:00:65Z</time></trkpt>", false),
        ]
        let placed = Self.gpx(point: "@")
        let at = try #require(placed.firstIndex(of: UInt8(ascii: "@")))
        for (point, malformed) in cases {
            let bytes = Self.gpx(point: point)
            let whole = Self.gpxOutcome(bytes, scans: false)
            if case .failure = whole {
                #expect(malformed, "\(point): \(whole)")
            } else {
                #expect(!malformed, "\(point)")
            }
            // The point before it is scanned (read whole), so the comparison is with the scan in use.
            let parser = XMLPullParser(read: Self.reader(bytes, chunk: 1 << 20))
            while let event = try parser.next(), event != .start(name: "trkseg", attributes: []) {}
            #expect(parser.scanElement(HealthGPX.scanPoint) != nil, "\(point)")
            // From inside the point before it to past the end of the one after it.
            for cut in (at - 40)...(at + point.utf8.count + 40) {
                let read = Self.gpxOutcome(read: Self.reader(bytes, cuts: [cut]), scans: true)
                #expect(read == whole, "\(point): cut at \(cut - at)")
            }
            for chunk in 1...16 {
                let read = Self.gpxOutcome(read: Self.reader(bytes, cuts: [], chunk: chunk), scans: true)
                #expect(read == whole, "\(point): reads of \(chunk) bytes")
            }
        }
    }

    /// `HealthGPX.number` reads a plain decimal from its digits: the same `Double`, bit for bit, as the standard
    /// library's parse of the same text, for decimals of every length around the edges of its fast path (19 digits,
    /// 2⁵³, 22 digits after the point) and for texts that are no plain decimal. Seen failing with `number`
    /// multiplying by a power of ten below one instead of dividing (3,157 texts differ).
    @Test func gpxNumbersReadFromTheirDigitsAreTheStandardLibrarysDoubles() {
        // The same texts every run.
        var generator = SeededGenerator(seed: 0x9E37_79B9_7F4A_7C15)
        func random(_ bound: Int) -> Int { Int(generator.next() % UInt64(bound)) }
        func digits(_ count: Int) -> String { String((0..<count).map { _ in Character(String(random(10))) }) }
        var texts = [
            "0", "-0", "0.0", "-0.000000", "9007199254740992", "9007199254740993", "1234567890123456789",
            "12345678901234567890", "0.1", "0.30000000000000004", "1.7976931348623157", "4.9406564584124654",
            "0.0000000000000000000001", "0.00000000000000000000001", "", "-", ".", "1.", ".5", "+1", "1e5", "0x1p3",
            "nan", "inf", "-infinity", " 1", "1 ", "1.2.3", "--1", "١",
        ]
        for _ in 0..<20_000 {
            let sign = random(2) == 0 ? "" : "-"
            let integer = digits(1 + random(12))
            let fraction = random(4) == 0 ? "" : "." + digits(1 + random(random(4) == 0 ? 24 : 9))
            texts.append(sign + integer + fraction)
        }
        for text in texts {
            let bytes = Array(text.utf8)
            let read = bytes.withUnsafeBufferPointer { HealthGPX.number($0, 0, $0.count) }
            let expected = Double(text)
            #expect(read?.bitPattern == expected?.bitPattern && (read == nil) == (expected == nil), "\(text)")
        }
    }
}
