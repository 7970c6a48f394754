// Storage: payload/result/control containers, work queues (priority × partition) with their
// poison queues, the output queue, and the tables. The roles also create these idempotently
// at start (shared/provision.py); declaring them here keeps the names in one reviewed place.
param name string
param location string
param tags object
param partitions int
@description('Principal that gets data-plane access (the roles\' managed identity).')
param principalId string

var priorities = [ 'high', 'normal', 'low' ]
var workQueues = flatten(map(priorities, p => map(range(0, partitions), i => 'work-${p}-${i}')))
var queues = concat(workQueues, map(workQueues, q => '${q}-poison'), [ 'results' ])

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: {
    minimumTlsVersion: 'TLS1_2'
    allowBlobPublicAccess: false
    allowSharedKeyAccess: false // identities only: no keys to leak
    supportsHttpsTrafficOnly: true
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: account
  name: 'default'
}

resource containers 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = [
  for c in [ 'payloads', 'results', 'control' ]: { parent: blobService, name: c }
]

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: account
  name: 'default'
}

resource queueResources 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [
  for q in queues: { parent: queueService, name: q }
]

resource tableService 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' = {
  parent: account
  name: 'default'
}

resource tables 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = [
  for t in [ 'batches', 'chunks', 'processors' ]: { parent: tableService, name: t }
]

// Built-in data-plane roles: Blob, Queue and Table Data Contributor.
var roles = [
  'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
  '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
]

resource grants 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in roles: {
    scope: account
    name: guid(account.id, principalId, role)
    properties: {
      principalId: principalId
      principalType: 'ServicePrincipal'
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role)
    }
  }
]

output name string = account.name
output accountUrl string = 'https://${account.name}.blob.${environment().suffixes.storage}'
