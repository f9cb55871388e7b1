import Foundation
import Testing
import WorkoutModel

/// Quantity types: dense unique indices, canonical units that fit their aggregation.
@Suite("Model: quantity types")
struct QuantityTypeTests {
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
}
