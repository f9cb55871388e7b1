import Foundation
import Testing
import WorkoutModel

@Suite("Model")
struct ModelTests {
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

    @Test func quantityTypeIndicesAreDenseAndUnique() {
        let indices = QuantityType.allCases.map(\.index)
        #expect(Set(indices).count == indices.count)
        #expect(indices.sorted() == Array(0..<QuantityType.allCases.count))
    }

    @Test func everyCanonicalUnitFitsItsAggregation() {
        for type in QuantityType.allCases {
            #expect(QuantityUnit(symbol: type.canonicalUnit.symbol) != nil, "\(type) canonical unit is known")
        }
        #expect(QuantityType.distanceSwimming.aggregationStyle == .cumulative)
        #expect(QuantityType.heartRate.aggregationStyle == .discrete)
        #expect(QuantityType.heartRateRecoveryOneMinute.canonicalUnit == .countPerMinute)
    }

    @Test func sampleValidation() throws {
        let source = SourceDevice(name: "test")
        let now = Date(timeIntervalSinceReferenceDate: 0)
        #expect(try QuantitySample(.heartRate, 2, .hertz, at: now, source: source).validate() == 120)
        #expect(throws: SampleValidationError.notFinite(.heartRate, .infinity)) {
            try QuantitySample(.heartRate, .infinity, at: now, source: source).validate()
        }
        #expect(
            throws: SampleValidationError.wrongDimension(.distanceCycling, unit: .countPerMinute, expected: .length)
        ) {
            try QuantitySample(.distanceCycling, 10, .countPerMinute, at: now, source: source).validate()
        }
        #expect(throws: SampleValidationError.self) {
            try QuantitySample(.distanceCycling, -1, at: now, source: source).validate()
        }
        #expect(throws: SampleValidationError.self) {
            try QuantitySample(.distanceCycling, 1, at: now, end: now.addingTimeInterval(-1), source: source).validate()
        }
        let message = SampleValidationError.wrongDimension(.distanceCycling, unit: .countPerMinute, expected: .length)
            .description
        #expect(message.contains("count/min") && message.contains("m"))
    }

    @Test func swimBikeRunPlansFiveLegs() {
        let configuration = WorkoutConfiguration(
            activityType: .swimBikeRun, locationType: .outdoor, swimmingLocationType: .pool,
            lapLength: Quantity(50, .meter))
        let legs = configuration.plannedLegs
        #expect(legs.map(\.activityType) == [.swimming, .transition, .cycling, .transition, .running])
        #expect(legs[0].lapLength == Quantity(50, .meter))
        #expect(legs[0].swimmingLocationType == .pool)
        #expect(WorkoutConfiguration(activityType: .running).plannedLegs.isEmpty)
    }

    @Test func statisticsKeyedByTypeEncodeAsAJSONObject() throws {
        let stats = Statistics(
            quantityType: .heartRate, start: Date(timeIntervalSinceReferenceDate: 0),
            end: Date(timeIntervalSinceReferenceDate: 60), average: Quantity(140, .countPerMinute), duration: 60)
        let data = try JSONEncoder().encode([QuantityType.heartRate: stats])
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        #expect(object?["heartRate"] != nil)
        #expect(try JSONDecoder().decode([QuantityType: Statistics].self, from: data) == [.heartRate: stats])
    }

    @Test func routePointValidity() {
        let now = Date(timeIntervalSinceReferenceDate: 0)
        #expect(RoutePoint(date: now, latitude: 48, longitude: 11).isValid)
        #expect(!RoutePoint(date: now, latitude: -91, longitude: 11).isValid)
        #expect(!RoutePoint(date: now, latitude: 48, longitude: 181).isValid)
        #expect(!RoutePoint(date: now, latitude: 48, longitude: 11, speed: -1).isValid)
    }
}
