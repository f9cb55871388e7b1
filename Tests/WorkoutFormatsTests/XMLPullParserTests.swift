import Foundation
import Testing
import WorkoutImport

/// The streaming parser of the Apple Health reader (and of GPX): the same events and errors however
/// its input arrives and whatever a pass skips, and bounded memory on hostile input.
@Suite("XML pull parser")
struct XMLPullParserTests {
    struct Parse: Equatable {
        var events: [XMLEvent] = []
        var error: XMLStreamError?
    }

    /// Parses `bytes`, handed over `piece` bytes at a time (nil: as much as the parser asks for).
    static func parse(_ bytes: [UInt8], piece: Int? = nil, skipping: Bool = false) -> Parse {
        var position = 0
        let parser = XMLPullParser(allowsFragments: true) { target in
            let count = min(target.count, bytes.count - position, piece ?? Int.max)
            guard count > 0 else { return 0 }
            bytes.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[position..<(position + count)]))
            }
            position += count
            return count
        }
        if skipping { parser.skipsAttributes = { _, _ in true } }
        var parse = Parse()
        do {
            while let event = try parser.next() { parse.events.append(event) }
        } catch {
            parse.error = error
        }
        return parse
    }

    static func withoutAttributes(_ parse: Parse) -> Parse {
        var copy = parse
        copy.events = parse.events.map { event in
            if case .start(let name, _) = event { return .start(name: name, attributes: []) }
            return event
        }
        return copy
    }

    static var swim: [UInt8] {
        get throws {
            let path = (SharedData.directory as NSString).appendingPathComponent("applehealth/nr_fragments/workout_swimming.xml")
            return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        }
    }

    @Test func aRealFragmentReadsTheSameInOneGoByteByByteAndWithAttributesSkipped() throws {
        let bytes = try Self.swim
        let whole = Self.parse(bytes)
        #expect(whole.error == nil)
        #expect(whole.events.count > 100)
        // The pool swim's 15 lengths are Lap events with their stroke style.
        let laps = whole.events.filter {
            if case .start("WorkoutEvent", let attributes) = $0 {
                return attributes.contains { $0.name == "type" && $0.value == "HKWorkoutEventTypeLap" }
            }
            return false
        }
        #expect(laps.count == 15)
        #expect(Self.parse(bytes, piece: 1) == whole)
        #expect(Self.parse(bytes, piece: 7) == whole)
        #expect(Self.parse(bytes, skipping: true) == Self.withoutAttributes(whole))
    }

    @Test func anErrorIsTheSameWhereverTheInputIsCutAndWhenAttributesAreSkipped() throws {
        // A cut-short copy of the real fragment, and one with an attribute name holding a space (2015 exports).
        let bytes = try Self.swim
        let cut = Array(bytes.prefix(bytes.count * 2 / 3))
        let spaced = Array("<HealthData>\n <Record type=\"x\"\n   Health Mate=\"2\"/>\n</HealthData>\n".utf8)
        for input in [cut, spaced] {
            let whole = Self.parse(input)
            let error = try #require(whole.error)
            #expect(Self.parse(input, piece: 1) == whole)
            #expect(Self.parse(input, piece: 3, skipping: true) == Self.withoutAttributes(whole))
            #expect(error.position.line > 1)
        }
        #expect(Self.parse(spaced).error?.position.line == 3)
    }

    /// A skipped tag read in one go (the one-sweep check over the buffer) and in pieces of one byte (the byte loop)
    /// gives the same events, or the same error at the same place, as reading its attributes: for tags that sweep
    /// takes (entities, line ends in values, non-ASCII values) and the ones it leaves to the loop.
    @Test func aSkippedTagIsCheckedAsTheByteLoopChecksIt() throws {
        let many = (0..<40).map { " a\($0)=\"\($0)\"" }.joined()
        let tags = [
            #"<R type="x" device="&lt;&lt;HKDevice&gt;, name:Watch&gt;" value='1 &amp; &quot;2&apos;'/>"#,
            "<R a=\"line\nend\ttab\" b = 'Ryan’s Watch' >\n</R>",
            "<R\ta=\"1\"\r\nb=\"2\"/>",
            "<R\(many)/>",
            #"<R a="1" b="2" a="3"/>"#,
            "<R a=\"1\" é=\"2\" e\u{301}=\"3\"/>",
            #"<R a="&#x41;" b="&unknown;"/>"#,
            #"<R a="1 < 2"/>"#,
            "<R a=\"\u{0B}\"/>",
            #"<R a="1"b="2"/>"#,
            #"<R a=1/>"#,
            #"<R a/>"#,
            #"<R 1a="1"/>"#,
            #"<R a="1" / >"#,
            #"<R a="1""#,
        ]
        for tag in tags {
            let input = Array("<HealthData>\n \(tag)\n</HealthData>\n".utf8)
            let kept = Self.parse(input)
            #expect(Self.parse(input, skipping: true) == Self.withoutAttributes(kept), "\(tag)")
            #expect(Self.parse(input, piece: 1, skipping: true) == Self.withoutAttributes(kept), "\(tag)")
        }
    }

    @Test func anAttributeLeftOutIsCheckedButNotGiven() throws {
        /// Each start tag as `name a=v …`.
        func parse(_ text: String) throws -> [String] {
            let parser = XMLPullParser(bytes: Array(text.utf8))
            parser.skipsAttribute = { element, attribute in element == "R" && attribute == "device" }
            var starts: [String] = []
            while let event = try parser.next() {
                if case .start(let name, let attributes) = event {
                    starts.append(([name] + attributes.map { "\($0.name)=\($0.value)" }).joined(separator: " "))
                }
            }
            return starts
        }
        let starts = try parse(#"<D device="d"><R type="x" device="&lt;W&gt;" value="1"/></D>"#)
        #expect(starts == ["D device=d", "R type=x value=1"])
        // Left out, it still counts as present (a second one is an error) and is still checked.
        #expect(throws: XMLStreamError.self) { try parse(#"<R device="a" device="b"/>"#) }
        #expect(throws: XMLStreamError.self) { try parse(#"<R device="&nope;"/>"#) }
    }

    @Test func aValueLongerThanTheTokenLimitIsRefusedNotHeld() throws {
        var bytes = Array("<HealthData><Record value=\"".utf8)
        bytes += [UInt8](repeating: UInt8(ascii: "7"), count: XMLPullParser.tokenLimit + 10)
        bytes += Array("\"/></HealthData>".utf8)
        let parse = Self.parse(bytes)
        let error = try #require(parse.error)
        #expect(error.detail.contains("longer than"))
        // Nothing was made of the value: the only event is the root's start.
        #expect(parse.events.count == 1)
    }
}
