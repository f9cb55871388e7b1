import Foundation
import Testing
import WorkoutModel

/// Metadata as JSON: plain values for people and scripts, the typed form for the store, and the
/// synthesised enum form of earlier versions still read.
@Suite("Metadata JSON")
struct MetadataCodingTests {
    static let sample: Metadata = [
        "Strokes": .int(28), "SWOLF": .double(40), "Ratio": .double(0.25),
        "ImportDevice": .string("Garmin Forerunner 920XT"),
        "Indoor": .bool(true), "LapLength": .quantity(Quantity(25, .meter)),
        "When": .date(Date(timeIntervalSince1970: 1_420_445_121)),
    ]

    func text(_ metadata: Metadata, typed: Bool) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        if typed { encoder.userInfo[MetadataValue.typedCoding] = true }
        return String(decoding: try encoder.encode(metadata), as: UTF8.self)
    }

    func decode(_ text: String) throws -> Metadata {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(Metadata.self, from: Data(text.utf8))
    }

    @Test func valuesAreWrittenAsPlainJSONValues() throws {
        let json = try text(Self.sample, typed: false)
        #expect(json.contains(#""Strokes":28"#))
        #expect(json.contains(#""ImportDevice":"Garmin Forerunner 920XT""#))
        #expect(json.contains(#""Indoor":true"#))
        #expect(json.contains(#""Ratio":0.25"#))
        #expect(json.contains(#""LapLength":{"unit":"m","value":25}"#))
        #expect(json.contains(#""When":"2015-01-05T08:05:21Z""#))
        #expect(!json.contains("_0"))
    }

    @Test func plainValuesReadBackAsTheirJSONKinds() throws {
        let decoded = try decode(
            #"{"Strokes": 28, "Ratio": 0.25, "Name": "x", "On": false, "Pool": {"value": 50, "unit": "m"}}"#)
        #expect(decoded["Strokes"] == .int(28))
        #expect(decoded["Ratio"] == .double(0.25))
        #expect(decoded["Name"] == .string("x"))
        #expect(decoded["On"] == .bool(false))
        #expect(decoded["Pool"] == .quantity(Quantity(50, .meter)))
        // Plain JSON cannot tell an integral double from an int: read it as a number either way.
        #expect(decoded["Strokes"]?.numberValue == 28)
    }

    @Test func theTypedFormRoundTripsEveryKindExactly() throws {
        let json = try text(Self.sample, typed: true)
        #expect(json.contains(#""SWOLF":{"double":40}"#))
        #expect(!json.contains("_0"))
        #expect(try decode(json) == Self.sample)
    }

    @Test func theSynthesisedFormOfEarlierVersionsIsStillRead() throws {
        // Exactly what earlier versions stored (Swift's synthesised enum coding).
        let old =
            #"{"ImportDevice":{"string":{"_0":"Garmin product 1765"}},"Strokes":{"int":{"_0":28}},"#
            + #""SWOLF":{"double":{"_0":40}},"Indoor":{"bool":{"_0":true}},"#
            + #""LapLength":{"quantity":{"_0":{"unit":"m","value":25}}}}"#
        let decoded = try decode(old)
        #expect(decoded["ImportDevice"] == .string("Garmin product 1765"))
        #expect(decoded["Strokes"] == .int(28))
        #expect(decoded["SWOLF"] == .double(40))
        #expect(decoded["Indoor"] == .bool(true))
        #expect(decoded["LapLength"] == .quantity(Quantity(25, .meter)))
    }

    @Test func anUnknownObjectIsAnError() {
        #expect(throws: DecodingError.self) { try decode(#"{"X": {"colour": "red"}}"#) }
    }
}
