import Foundation
import WorkoutModel

/// Merges a finished recording's small chunks into chunks of `Series.capacity`: what a backend does
/// inside the transaction that finishes a journaled recording (docs/storage-chunks.md, "Journal").
///
/// A recording's journal closes each stream's chunk at `Series.journalTailCapacity` samples; the
/// finished workout is stored as a save of the same samples would be: per stream, by ordinal, in chunks
/// of `Series.capacity` (each sample keeps its ordinal, so every query answers as before). A stream
/// already in that form is left alone (a short recording's single chunk costs nothing).
package enum ChunkCompaction {
    /// What to delete and write instead.
    package struct Plan: Sendable {
        /// First ordinals of the sample chunks to delete (their key within the workout).
        package var deletedSampleChunks: [Int64] = []
        package var sampleChunks: [SampleChunk] = []
        package var deletedRouteChunks: [Int64] = []
        package var routeChunks: [RouteChunk] = []

        package var isEmpty: Bool { deletedSampleChunks.isEmpty && deletedRouteChunks.isEmpty }
    }

    /// The plan for a workout whose chunks are `samples` and `route` (any order). Throws
    /// `.corruptChunk` naming `workout` when a chunk to merge does not decode.
    package static func plan(samples: [SampleChunk], route: [RouteChunk], workout: UUID) throws(StoreError) -> Plan {
        var plan = Plan()
        var streams: [Series.StreamKey: [SampleChunk]] = [:]
        for chunk in samples { streams[Series.StreamKey(type: chunk.type, source: chunk.source), default: []].append(chunk) }
        // One stream decoded at a time: the merge holds at most one stream's samples.
        for (key, chunks) in streams {
            let sorted = chunks.sorted { $0.firstOrdinal < $1.firstOrdinal }
            guard !isCompact(sorted.map(\.count)) else { continue }
            var stream: [(Int64, QuantitySample)] = []
            stream.reserveCapacity(sorted.reduce(0) { $0 + $1.count })
            for chunk in sorted { stream += try Series.decode(chunk, workout: workout) }
            stream.sort { $0.0 < $1.0 }
            plan.deletedSampleChunks += sorted.map(\.firstOrdinal)
            plan.sampleChunks += Series.chunks(key, stream)
        }
        let routeSorted = route.sorted { $0.firstOrdinal < $1.firstOrdinal }
        if !isCompact(routeSorted.map(\.count)) {
            var points: [(Int64, RoutePoint)] = []
            for chunk in routeSorted { points += try Series.decode(chunk, workout: workout) }
            points.sort { $0.0 < $1.0 }
            plan.deletedRouteChunks = routeSorted.map(\.firstOrdinal)
            var start = 0
            while start < points.count {
                let end = min(start + Series.capacity, points.count)
                plan.routeChunks.append(Series.routeChunk(points[start..<end]))
                start = end
            }
        }
        return plan
    }

    /// Whether chunks of these sizes (in ordinal order) are already as a save writes them: every one full
    /// but the last.
    static func isCompact(_ counts: [Int]) -> Bool {
        counts.dropLast().allSatisfy { $0 == Series.capacity }
    }
}
