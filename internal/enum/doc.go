// Package enum gives the library's enumerations (integer types whose values
// are 0, 1, …) their names: String, Parse, MarshalText and UnmarshalText
// from one Table per type, with the error texts each package chooses. It is
// internal: its names are not part of the module's API.
package enum
