import Foundation
import Testing
import WorkoutModel

/// Units convert within a dimension only, and their symbols round-trip.
@Suite("Model: units")
struct UnitConversionTests {
    @Test func unitsConvertWithinADimensionOnly() throws {
        #expect(QuantityUnit.kilometer.convert(1.5, to: .meter) == 1500)
        #expect(abs(try #require(QuantityUnit.kilometerPerHour.convert(36, to: .meterPerSecond)) - 10) < 1e-12)
        #expect(abs(try #require(QuantityUnit.hertz.convert(2, to: .countPerMinute)) - 120) < 1e-9)
        #expect(abs(try #require(QuantityUnit.mile.convert(1, to: .kilometer)) - 1.609344) < 1e-12)
        #expect(QuantityUnit.countPerMinute.convert(150, to: .meter) == nil)
        #expect(Quantity(100, .countPerMinute).doubleValue(for: .kilometer) == nil)
    }

    @Test func unitSymbolsRoundTripAndUnknownSymbolsFail() throws {
        let encoded = try JSONEncoder().encode(Quantity(3, .kilometerPerHour))
        #expect(try JSONDecoder().decode(Quantity.self, from: encoded) == Quantity(3, .kilometerPerHour))
        #expect(QuantityUnit(symbol: "bpm") == .countPerMinute)
        #expect(QuantityUnit(symbol: "furlong") == nil)
        let bad = Data(#"{"value": 3, "unit": "furlong"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Quantity.self, from: bad) }
    }
}
