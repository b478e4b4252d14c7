import fc from 'fast-check'

/**
 * fast-check configured for these tests. By default its size is 'small', which caps a generated array at
 * about ten elements whatever its maxLength says; the properties here are mostly operation sequences
 * whose interesting cases (growth, compaction, renumbering, wrap-around, spilling) need many more. With
 * this setting an array with a maxLength is generated up to that length.
 */
fc.configureGlobal({ ...fc.readConfigureGlobal(), defaultSizeToMaxWhenMaxSpecified: true })

export default fc
