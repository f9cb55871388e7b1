import Foundation
import Testing
import WorkoutModel
import WorkoutStore
import WorkoutTestSupport

/// The store's hand-written JSON (`JSON.encode` of metadata, configurations and counters) writes exactly the text
/// JSONEncoder wrote: stored rows stay byte-identical, and equal values keep storing equal text.
@Suite("Store: JSON columns")
struct JSONTextTests {
    /// Characters that JSONEncoder escapes or sorts in its own way: "/", quote, backslash, every control, DEL,
    /// non-ASCII (precomposed and combining, outside the BMP, the line separator), digits ("Key10" before "Key2").
    static let alphabet: [String] =
        [
            "a", "B", "z", "Z", "_", "0", "1", "2", "9", " ", "/", "\"", "\\", "\u{7F}", "é", "e\u{301}", "😀",
            "\u{2028}",
            "ß", "Ω", "{", "}", ":", ",",
        ] + (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }

    static func randomString(_ generator: inout SeededGenerator) -> String {
        let length = Int.random(in: 0...9, using: &generator)
        return (0..<length).map { _ in alphabet.randomElement(using: &generator) ?? "a" }.joined()
    }

    static func randomDouble(_ generator: inout SeededGenerator) -> Double {
        switch Int.random(in: 0..<9, using: &generator) {
        case 0: return Double(bitPattern: generator.next())  // anything: NaN payloads, subnormals, huge
        case 1: return Double(Int.random(in: -100_000...100_000, using: &generator))  // integral: "1", not "1.0"
        case 2: return Double(Int.random(in: -100_000...100_000, using: &generator)) / 100
        case 3: return Double.random(in: -1...1, using: &generator) * 1e-7
        case 4: return Double.random(in: 1e15...1e17, using: &generator).rounded()  // around description's switch to e+
        case 5:
            return [
                0, -0.0, 1, 0.1, 1e-7, 1e16, 1e15, Double.leastNonzeroMagnitude, .greatestFiniteMagnitude,
                -.greatestFiniteMagnitude,
                .leastNormalMagnitude, .infinity, -.infinity, .nan, 100, 2.5e-5, 123_456_789_012_345_680,
            ].randomElement(using: &generator) ?? 0
        default: return Double.random(in: -1e6...1e6, using: &generator)
        }
    }

    static func randomValue(_ generator: inout SeededGenerator) -> MetadataValue {
        switch Int.random(in: 0..<6, using: &generator) {
        case 0: return .string(randomString(&generator))
        case 1: return .double(randomDouble(&generator))
        case 2:
            return .int(
                Bool.random(using: &generator)
                    ? Int.random(in: -1000...1000, using: &generator)
                    : Int(truncatingIfNeeded: generator.next()))
        case 3: return .bool(Bool.random(using: &generator))
        case 4: return .date(Date(timeIntervalSinceReferenceDate: randomDouble(&generator)))
        default:
            // A unit of the known set, or any symbol (a unit is public; its symbol is written as a string).
            let unit =
                Bool.random(using: &generator)
                ? QuantityUnit.known.randomElement(using: &generator) ?? .meter
                : QuantityUnit(symbol: randomString(&generator), dimension: .length, scale: 1)
            return .quantity(Quantity(randomDouble(&generator), unit))
        }
    }

    static func randomMetadata(_ generator: inout SeededGenerator) -> Metadata {
        var metadata: Metadata = [:]
        for _ in 0..<Int.random(in: 0...7, using: &generator) {
            metadata[randomString(&generator)] = randomValue(&generator)
        }
        return metadata
    }

    /// JSONEncoder's text, as `JSON.encode` wrote it before the hand-written encoder.
    func encoderText<T: Encodable>(_ value: T) throws -> String { try JSON.encodeWithJSONEncoder(value) }

    @Test func metadataIsWrittenAsJSONEncoderWritesIt() throws {
        var generator = SeededGenerator(seed: 0x5EED_0001)
        for _ in 0..<3000 {
            let metadata = Self.randomMetadata(&generator)
            let expected = try encoderText(metadata)
            try #require(JSON.encode(metadata) == expected, "\(metadata)")
        }
    }

    @Test func edgeCasesAreWrittenAsJSONEncoderWritesThem() throws {
        var cases: [Metadata] = [
            [:], ["": .string("")], ["Key10": .int(1), "Key2": .int(2), "a": .int(3), "B": .int(4), "_": .int(5)],
            ["é": .int(1), "e\u{301}x": .int(2)],
            ["url": .string("https://example.com/a/b"), "quote": .string(#"say "hi" \ back"#)],
            ["controls": .string((0..<0x20).map { String(UnicodeScalar(UInt8($0))) }.joined() + "\u{7F}")],
            ["unicode": .string("é😀\u{2028}\u{2029}ß")],
            ["Int.min": .int(.min), "Int.max": .int(.max), "zero": .int(0)],
            ["rate": .quantity(Quantity(150, .countPerMinute)), "nan": .quantity(Quantity(.nan, .meter))],
            ["date": .date(Date(timeIntervalSinceReferenceDate: 0.5)), "inf": .date(.distantFuture)],
            ["nonFiniteDate": .date(Date(timeIntervalSinceReferenceDate: -.infinity))],
        ]
        for value in [
            0, -0.0, 1, 0.1, 1e-7, 1e16, 1e15, 1e-5, Double.leastNonzeroMagnitude, .greatestFiniteMagnitude, .infinity,
            -.infinity,
            .nan, 100, 2.5e-5, 123_456_789_012_345_680, 1.0 / 3, -1e300, 9_007_199_254_740_994,
        ] {
            cases.append(["v": .double(value)])
        }
        for metadata in cases {
            let expected = try encoderText(metadata)
            #expect(JSON.encode(metadata) == expected, "\(metadata)")
        }
    }

    @Test func configurationsAreWrittenAsJSONEncoderWritesThem() throws {
        var generator = SeededGenerator(seed: 0x5EED_0002)
        for activity in WorkoutActivityType.allCases {
            for location in LocationType.allCases {
                for swimming in SwimmingLocationType.allCases {
                    for lap in [nil, Quantity(25, .meter), Quantity(33.33, .yard)]
                        + [
                            Quantity(
                                Self.randomDouble(&generator),
                                QuantityUnit.known.randomElement(using: &generator) ?? .meter)
                        ]
                    {
                        let configuration = WorkoutConfiguration(
                            activityType: activity, locationType: location, swimmingLocationType: swimming,
                            lapLength: lap)
                        let expected = try encoderText(configuration)
                        #expect(JSON.encode(configuration) == expected, "\(configuration)")
                    }
                }
            }
        }
    }

    @Test func countersAreWrittenAsJSONEncoderWritesThem() throws {
        var generator = SeededGenerator(seed: 0x5EED_0003)
        for round in 0..<500 {
            var counters = IngestCounters()
            counters.accepted =
                round == 0 ? 0 : Int(truncatingIfNeeded: generator.next()) >> Int.random(in: 0...63, using: &generator)
            for reason in DropReason.allCases where Bool.random(using: &generator) {
                counters.drop(reason, count: Int.random(in: 0...1_000_000, using: &generator))
            }
            let expected = try encoderText(counters)
            #expect(JSON.encode(counters) == expected, "\(counters)")
        }
    }

    /// The hand-written text knows each stored property of the configuration and the counters: a property added to
    /// either type must be written by `JSONText` too (and set in the tests above), or it would be left out of the
    /// store's text silently. Fails, naming the properties, when the types change.
    @Test func theHandWrittenTypesHaveThePropertiesJSONTextWrites() {
        let configuration = Mirror(reflecting: WorkoutConfiguration(activityType: .running)).children.compactMap(\.label)
        #expect(configuration == ["activityType", "locationType", "swimmingLocationType", "lapLength"])
        #expect(Mirror(reflecting: IngestCounters()).children.compactMap(\.label) == ["accepted", "dropped"])
    }
}
